/** GET /blocks and GET /blocks/{block_id}. */
import type { Reply, Req } from '../http/server.js';
import { answer, serializer, type Answer } from '../http/route.js';
import { ledgerRoute, type LedgerRoute } from './route.js';
import { ledgerError, LedgerErrorCode } from './errors.js';
import { selfUrl } from './links.js';
import { listEnvelope, replies } from './schemas.js';
import { blockMarker, checkIds, listQuery, parseBlockMarker, parseReverse, type ListQuery } from './params.js';
import { EMPTY_PAGE, pagingEnvelope, takePage } from './paging.js';
import type { ChainReader, ResolvedHead } from './chain.js';

function* numRange(from: number, to: number): Generator<number> {
  if (from <= to) for (let n = from; n <= to; n++) yield n;
  else for (let n = from; n >= to; n--) yield n;
}

const writeEnvelope = serializer(listEnvelope);
const OPEN = Buffer.from('{"data":[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('],');

/**
 * A list reply whose `data` is already serialised: the bytes of the block list schema's
 * writer for `{data, ...envelope}` (keys in order: data, head, link, paging), built by
 * concatenation, so a page costs a copy of its blocks' cached JSON, not a serialisation.
 */
function listOfSerialised(parts: Buffer[], envelope: object): Reply {
  const rest = Buffer.from(writeEnvelope(envelope).slice(1));
  const chunks: Buffer[] = [OPEN];
  parts.forEach((p, i) => {
    if (i > 0) chunks.push(COMMA);
    chunks.push(p);
  });
  chunks.push(CLOSE, rest);
  return { status: 200, body: Buffer.concat(chunks) };
}

/** The query of the block list, its head looked up. */
interface BlocksAt extends ListQuery {
  at: ResolvedHead;
  /** Read only for a list that is not picked by id (upstream ignores it there). */
  reverse: boolean;
}

/**
 * The block list's parser: `limit`/`start`, `head` and `id` (listQuery), then the head
 * looked up (404 code 50), then, unless blocks are picked by id, `reverse` (400 code 57).
 */
function blocksAt(chain: ChainReader): (req: Req) => BlocksAt {
  return (req) => {
    const q = listQuery(req);
    const at = chain.resolveHead(q.head, LedgerErrorCode.HeadNotFound);
    return { ...q, at, reverse: q.ids === undefined && parseReverse(req, 'block_num') };
  };
}

function listBlocks(chain: ChainReader, req: Req, { paging, at: head, ids, reverse }: BlocksAt): Answer | Reply {
  if (ids !== undefined) {
    // Upstream: blocks picked by id are neither sorted nor paged; those above the head are dropped.
    const data = ids.flatMap((id) => {
      const b = chain.byId(id);
      return b && b.num <= head.num ? [b.json] : [];
    });
    return answer({ data, ...pagingEnvelope(req, '/blocks', head.id, paging, EMPTY_PAGE) });
  }
  let from = reverse ? 0 : head.num;
  if (paging.start !== undefined) {
    const n = parseBlockMarker(paging.start);
    if (n === null || n > head.num) throw ledgerError(LedgerErrorCode.InvalidPagingQuery, `: no block ${paging.start} on this chain`);
    from = n;
  }
  const page = takePage(numRange(from, reverse ? head.num : 0), blockMarker, paging.limit);
  const parts = page.items.map((n) => chain.jsonAt(n).bytes);
  return listOfSerialised(parts, pagingEnvelope(req, '/blocks', head.id, paging, page));
}

function fetchBlock(chain: ChainReader, req: Req, id: string): Answer {
  checkIds([id]);
  const block = chain.byId(id);
  if (!block) throw ledgerError(LedgerErrorCode.BlockNotFound, `: ${id}`);
  return answer({ data: block.json, link: selfUrl(req) });
}

export function blockRoutes(chain: ChainReader): LedgerRoute[] {
  return [
    ledgerRoute({
      method: 'get',
      path: '/blocks',
      query: blocksAt(chain),
      reply: replies.blockList,
      handler: ({ req, query }) => listBlocks(chain, req, query),
    }),
    ledgerRoute({
      method: 'get',
      path: '/blocks/:block_id',
      reply: replies.block,
      handler: ({ req, params }) => fetchBlock(chain, req, params.block_id),
    }),
  ];
}
