/** GET /blocks and GET /blocks/{block_id}. */
import type { HttpServer, Reply, Req } from '../http/server.js';
import type { Ledger } from '../ledger/ledger.js';
import { ledgerError } from './errors.js';
import { buildUrl } from './links.js';
import { blockJson, serialize } from './json.js';
import { blockMarker, checkIds, parseBlockMarker, parsePaging } from './params.js';
import { takePage, pagingEnvelope } from './paging.js';
import { blockByNum, blockBytes, resolveHead } from './chain.js';

function* blockNums(from: number, to: number): Generator<number> {
  if (from <= to) for (let n = from; n <= to; n++) yield n;
  else for (let n = from; n >= to; n--) yield n;
}

function listBlocks(ledger: Ledger, req: Req): Reply {
  const paging = parsePaging(req, 'block_num');
  const head = resolveHead(ledger, req.query.get('head'), 50, true);
  const ids = req.query.get('id');
  if (ids !== null) {
    const data = checkIds(ids.split(','))
      .map((id) => blockBytes(ledger, id))
      .filter((b): b is Buffer => b !== undefined)
      .map((b) => blockJson(b))
      .filter((b) => Number(b.header.blockNum.toString()) <= head.num)
      .map((b) => b.json);
    const link = buildUrl(req, '/blocks', { head: head.id });
    return { status: 200, body: serialize.blockList({ data, head: head.id, link, paging: { limit: paging.clientLimit, start: paging.clientStart } }) };
  }
  let startNum: number | undefined;
  if (paging.start !== undefined) {
    const n = parseBlockMarker(paging.start);
    if (n === null || n > head.num) throw ledgerError(54);
    startNum = n;
  }
  const nums = paging.reverse ? blockNums(startNum ?? 0, head.num) : blockNums(startNum ?? head.num, 0);
  const page = takePage(nums, blockMarker, { ...paging, start: undefined });
  const data = page.items.map((n) => blockJson(blockByNum(ledger, n)!).json);
  const env = pagingEnvelope(req, '/blocks', head.id, paging, page);
  return { status: 200, body: serialize.blockList({ data, head: head.id, ...env }) };
}

function fetchBlock(ledger: Ledger, req: Req): Reply {
  const id = req.params[0]!;
  checkIds([id]);
  const bytes = blockBytes(ledger, id);
  if (!bytes) throw ledgerError(70);
  return { status: 200, body: serialize.block({ data: blockJson(bytes).json, link: buildUrl(req, `/blocks/${id}`) }) };
}

export function registerBlocks(server: HttpServer, ledger: Ledger): void {
  server.route('get', '/blocks', (req) => listBlocks(ledger, req));
  server.route('get', '/blocks/:block_id', (req) => fetchBlock(ledger, req));
}
