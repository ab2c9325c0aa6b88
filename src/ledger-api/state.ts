/** GET /state (leaves under an address prefix, paged by address) and GET /state/{address}. */
import type { Req } from '../http/server.js';
import { answer, type Answer } from '../http/route.js';
import { ledgerRoute, type LedgerRoute } from './route.js';
import { CorruptStateError, UnknownRootError } from '../state/merkle.js';
import { gatewayErrors, ledgerError, LedgerErrorCode } from './errors.js';
import { selfUrl } from './links.js';
import { b64 } from './json.js';
import { replies } from './schemas.js';
import { ADDRESS_PREFIX_RE, parsePaging, parseReverse, type Paging } from './params.js';
import { EMPTY_PAGE, pagingEnvelope, takePage, type Page } from './paging.js';
import type { ChainReader, ResolvedHead } from './chain.js';

type Leaf = { address: string; value: Buffer };

/**
 * A state root the tree no longer (or never) held: upstream's NO_ROOT, 404 code 50 (a
 * root pruned away answers the same). State that fails its hash check is never served: 503,
 * and the ledger is marked faulty.
 */
function withRoot<T>(chain: ChainReader, f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof UnknownRootError)
      throw ledgerError(
        LedgerErrorCode.HeadNotFound,
        `The block exists, but its state root ${err.root} is not available: pruned (cairn prune) or older than --state-history-blocks`,
        true,
      );
    if (err instanceof CorruptStateError) {
      chain.ledger.markFaulty(`state read failed its integrity check: ${err.message}`, 'CORRUPT');
      throw gatewayErrors.stateCorrupt();
    }
    throw err;
  }
}

/** The `head` query of the state routes, looked up (404 code 70 for a head not on the chain). */
function stateHead(chain: ChainReader, req: Req): ResolvedHead {
  return chain.resolveHead(req.query.get('head'), LedgerErrorCode.BlockNotFound);
}

function fetchState(chain: ChainReader, req: Req, head: ResolvedHead, address: string): Answer {
  if (!ADDRESS_PREFIX_RE.test(address)) throw ledgerError(LedgerErrorCode.InvalidStateAddress, `: got "${address}"`);
  // Only a full address can hold a leaf; a shorter well-formed one names an interior node.
  const value = address.length === 70 ? withRoot(chain, () => chain.ledger.query.state.get(head.stateRoot, address)) : undefined;
  if (value === undefined) throw ledgerError(LedgerErrorCode.StateNotFound, `: ${address}`);
  return answer({ data: b64(value), head: head.id, link: selfUrl(req, { head: head.id }) });
}

/** The query of GET /state, in the order it is read: `limit`/`start`, `head` (looked up), `address`, `reverse`. */
interface StateListQuery {
  paging: Paging;
  head: ResolvedHead;
  prefix: string;
  reverse: boolean;
}

function stateListQuery(chain: ChainReader, req: Req): StateListQuery {
  const paging = parsePaging(req);
  const head = stateHead(chain, req);
  const prefix = req.query.get('address') ?? '';
  if (!ADDRESS_PREFIX_RE.test(prefix)) throw ledgerError(LedgerErrorCode.InvalidStateAddress, `: got "${prefix}"`);
  return { paging, head, prefix, reverse: parseReverse(req, 'default') };
}

function listState(chain: ChainReader, req: Req, { paging, head, prefix, reverse }: StateListQuery): Answer {
  const tree = chain.ledger.query.state;
  const page: Page<Leaf> = withRoot(chain, () => {
    const start = paging.start;
    if (start === undefined) return takePage(tree.entries(head.stateRoot, prefix, { reverse }), (e) => e.address, paging.limit);
    const from = ADDRESS_PREFIX_RE.test(start) ? tree.entries(head.stateRoot, prefix, { start, reverse }) : undefined;
    const first = from?.next();
    if (first && !first.done && first.value.address === start) {
      const p = takePage(from!, (e) => e.address, paging.limit - 1);
      // takePage saw the rest of the page; put the first leaf back in front.
      return { items: [first.value, ...p.items], first: start, next: p.next };
    }
    // A start that names no leaf of a non-empty list is an error; an empty list is just empty.
    if (tree.entries(head.stateRoot, prefix).next().done) return EMPTY_PAGE;
    throw ledgerError(LedgerErrorCode.InvalidPagingQuery, `: no leaf at ${start} in this list`);
  });
  const data = page.items.map((e) => ({ address: e.address, data: b64(e.value) }));
  return answer({ data, ...pagingEnvelope(req, '/state', head.id, paging, page) });
}

export function stateRoutes(chain: ChainReader): LedgerRoute[] {
  return [
    ledgerRoute({
      method: 'get',
      path: '/state',
      query: (req) => stateListQuery(chain, req),
      reply: replies.stateList,
      handler: ({ req, query }) => listState(chain, req, query),
    }),
    ledgerRoute({
      method: 'get',
      path: '/state/:address',
      query: (req) => stateHead(chain, req),
      reply: replies.stateOne,
      handler: ({ req, params, query: head }) => fetchState(chain, req, head, params.address),
    }),
  ];
}
