/**
 * GET /batches, /batches/{batch_id}, /transactions, /transactions/{transaction_id}.
 *
 * Lists run in chain order: from the head block down to genesis, each block's items in
 * block order; `reverse` flips the whole list. Only the blocks a page needs are read: a
 * `start` id is located through the batch / transaction index instead of a scan.
 */
import type { Req } from '../http/server.js';
import { answer, type Answer, type ReplySchema } from '../http/route.js';
import { ledgerRoute, type LedgerRoute } from './route.js';
import type { BatchPos, TxnPos } from '../ledger/query.js';
import { ledgerError, LedgerErrorCode } from './errors.js';
import { selfUrl } from './links.js';
import { replies } from './schemas.js';
import { checkIds, listQuery, parseReverse, type ListQuery } from './params.js';
import { pageList, pagingEnvelope, takePage, type Page } from './paging.js';
import type { ChainBlock, ChainReader, ResolvedHead } from './chain.js';
import type { BatchJson, TxnJson } from './json.js';

interface Position {
  num: number;
  idx: number;
}

interface Kind<T> {
  path: string;
  notFound: LedgerErrorCode;
  itemsOf(b: ChainBlock): T[];
  id(t: T): string;
  /** Block number and index in `itemsOf` of a committed item, or undefined. */
  locate(chain: ChainReader, id: string): Position | undefined;
  listReply: ReplySchema;
  oneReply: ReplySchema;
}

const BATCHES: Kind<BatchJson> = {
  path: '/batches',
  notFound: LedgerErrorCode.BatchNotFound,
  itemsOf: (b) => b.json.batches,
  id: (t) => t.header_signature,
  locate: (chain, id) => {
    const p: BatchPos | undefined = chain.batchPos(id);
    return p && { num: p[0], idx: p[1] };
  },
  listReply: replies.batchList,
  oneReply: replies.batch,
};

const TRANSACTIONS: Kind<TxnJson> = {
  path: '/transactions',
  notFound: LedgerErrorCode.TransactionNotFound,
  itemsOf: (b) => b.txns(),
  id: (t) => t.header_signature,
  locate: (chain, id) => {
    const p: TxnPos | undefined = chain.txnPos(id);
    return p && { num: p[0], idx: chain.txnOffset(p) };
  },
  listReply: replies.txnList,
  oneReply: replies.txn,
};

/** Items of the chain ending at block `headNum`, in list order, from position `from` (inclusive). */
function* walk<T>(chain: ChainReader, kind: Kind<T>, headNum: number, reverse: boolean, from?: Position): Generator<T> {
  if (!reverse) {
    let idx = from?.idx ?? 0;
    for (let n = from?.num ?? headNum; n >= 0; n--) {
      const items = kind.itemsOf(chain.at(n));
      for (let i = idx; i < items.length; i++) yield items[i]!;
      idx = 0;
    }
  } else {
    let idx = from?.idx;
    for (let n = from?.num ?? 0; n <= headNum; n++) {
      const items = kind.itemsOf(chain.at(n));
      for (let i = idx ?? items.length - 1; i >= 0; i--) yield items[i]!;
      idx = undefined;
    }
  }
}

/** The query of a batch or transaction list, its head looked up. */
interface ListAt extends ListQuery {
  at: ResolvedHead;
  reverse: boolean;
}

/**
 * The list query's parser: `limit`/`start`, `head` and `id` (listQuery), then the head
 * looked up (404 code 50), then `reverse` (400 code 57), in that order.
 */
function listAt(chain: ChainReader): (req: Req) => ListAt {
  return (req) => {
    const q = listQuery(req);
    const at = chain.resolveHead(q.head, LedgerErrorCode.HeadNotFound);
    return { ...q, at, reverse: parseReverse(req, 'default') };
  };
}

function list<T>(chain: ChainReader, kind: Kind<T>, req: Req, { paging, at: head, ids, reverse }: ListAt): Answer {
  const notInList = (): Error => ledgerError(LedgerErrorCode.InvalidPagingQuery, `: ${paging.start} is not in this list`);
  let page: Page<T>;
  if (ids !== undefined) {
    // Picked by id: in the order given, those not on this chain left out.
    const picked = ids.flatMap((id) => {
      const p = kind.locate(chain, id);
      return p && p.num <= head.num ? [kind.itemsOf(chain.at(p.num))[p.idx]!] : [];
    });
    if (reverse) picked.reverse();
    page = pageList(picked, kind.id, paging, notInList);
  } else {
    let from: Position | undefined;
    if (paging.start !== undefined) {
      from = kind.locate(chain, paging.start);
      if (!from || from.num > head.num) throw notInList();
    }
    page = takePage(walk(chain, kind, head.num, reverse, from), kind.id, paging.limit);
  }
  return answer({ data: page.items, ...pagingEnvelope(req, kind.path, head.id, paging, page) });
}

function fetchOne<T>(chain: ChainReader, kind: Kind<T>, req: Req, id: string): Answer {
  checkIds([id]);
  const p = kind.locate(chain, id);
  if (!p) throw ledgerError(kind.notFound, `: ${id}`);
  return answer({ data: kind.itemsOf(chain.at(p.num))[p.idx]!, link: selfUrl(req) });
}

export function batchRoutes(chain: ChainReader): LedgerRoute[] {
  return [
    ledgerRoute({
      method: 'get',
      path: '/batches',
      query: listAt(chain),
      reply: BATCHES.listReply,
      handler: ({ req, query }) => list(chain, BATCHES, req, query),
    }),
    ledgerRoute({
      method: 'get',
      path: '/batches/:batch_id',
      reply: BATCHES.oneReply,
      handler: ({ req, params }) => fetchOne(chain, BATCHES, req, params.batch_id),
    }),
    ledgerRoute({
      method: 'get',
      path: '/transactions',
      query: listAt(chain),
      reply: TRANSACTIONS.listReply,
      handler: ({ req, query }) => list(chain, TRANSACTIONS, req, query),
    }),
    ledgerRoute({
      method: 'get',
      path: '/transactions/:transaction_id',
      reply: TRANSACTIONS.oneReply,
      handler: ({ req, params }) => fetchOne(chain, TRANSACTIONS, req, params.transaction_id),
    }),
  ];
}
