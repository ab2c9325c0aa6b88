/** GET /blocks and GET /blocks/{block_id}. */
import type { Req } from '../http/server.js';
import { answer, type Answer } from '../http/route.js';
import type { LedgerRoute } from './route.js';
import { ledgerError, LedgerErrorCode } from './errors.js';
import { selfUrl } from './links.js';
import { replies } from './schemas.js';
import { blockMarker, checkIds, filterIds, parseBlockMarker, parsePaging, parseReverse } from './params.js';
import { EMPTY_PAGE, pagingEnvelope, takePage } from './paging.js';
import { checkHead, type ChainBlock, type ChainReader } from './chain.js';

function* blockRange(chain: ChainReader, from: number, to: number): Generator<ChainBlock> {
  if (from <= to) for (let n = from; n <= to; n++) yield chain.at(n);
  else for (let n = from; n >= to; n--) yield chain.at(n);
}

const marker = (b: ChainBlock): string => blockMarker(b.num);

function listBlocks(chain: ChainReader, req: Req): Answer {
  const paging = parsePaging(req);
  const headParam = req.query.get('head');
  checkHead(headParam, false);
  const ids = filterIds(req);
  const head = chain.resolveHead(headParam, LedgerErrorCode.HeadNotFound);
  if (ids !== undefined) {
    // Upstream: blocks picked by id are neither sorted nor paged; those above the head are dropped.
    const data = ids.flatMap((id) => {
      const b = chain.byId(id);
      return b && b.num <= head.num ? [b.json] : [];
    });
    return answer({ data, ...pagingEnvelope(req, '/blocks', head.id, paging, EMPTY_PAGE) });
  }
  const reverse = parseReverse(req, 'block_num');
  let from = reverse ? 0 : head.num;
  if (paging.start !== undefined) {
    const n = parseBlockMarker(paging.start);
    if (n === null || n > head.num) throw ledgerError(LedgerErrorCode.InvalidPagingQuery, `: no block ${paging.start} on this chain`);
    from = n;
  }
  const page = takePage(blockRange(chain, from, reverse ? head.num : 0), marker, paging.limit);
  const data = page.items.map((b) => b.json);
  return answer({ data, ...pagingEnvelope(req, '/blocks', head.id, paging, page) });
}

function fetchBlock(chain: ChainReader, req: Req): Answer {
  const id = req.params[0]!;
  checkIds([id]);
  const block = chain.byId(id);
  if (!block) throw ledgerError(LedgerErrorCode.BlockNotFound, `: ${id}`);
  return answer({ data: block.json, link: selfUrl(req) });
}

export function blockRoutes(chain: ChainReader): LedgerRoute[] {
  return [
    { method: 'get', path: '/blocks', reply: replies.blockList, handler: ({ req }) => listBlocks(chain, req) },
    { method: 'get', path: '/blocks/:block_id', reply: replies.block, handler: ({ req }) => fetchBlock(chain, req) },
  ];
}
