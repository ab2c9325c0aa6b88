/** GET /state and GET /state/{address}. */
import type { HttpServer, Reply, Req } from '../http/server.js';
import type { Ledger } from '../ledger/ledger.js';
import { ledgerError } from './errors.js';
import { buildUrl } from './links.js';
import { b64, serialize } from './json.js';
import { ADDRESS_PREFIX_RE, parsePaging } from './params.js';
import { takePage, pagingEnvelope } from './paging.js';
import { resolveHead } from './chain.js';

function fetchState(ledger: Ledger, req: Req): Reply {
  const address = req.params[0]!;
  if (!ADDRESS_PREFIX_RE.test(address)) throw ledgerError(62);
  const head = resolveHead(ledger, req.query.get('head'), 70, false);
  const value = address.length === 70 ? ledger.tree.get(head.stateRoot, address) : undefined;
  if (value === undefined) throw ledgerError(75);
  const link = buildUrl(req, `/state/${address}`, { head: head.id });
  return { status: 200, body: serialize.stateOne({ data: b64(value), head: head.id, link }) };
}

function listState(ledger: Ledger, req: Req): Reply {
  const paging = parsePaging(req, 'default');
  const prefix = req.query.get('address') ?? '';
  if (!ADDRESS_PREFIX_RE.test(prefix)) throw ledgerError(62);
  const head = resolveHead(ledger, req.query.get('head'), 70, false);
  if (paging.start !== undefined && !ADDRESS_PREFIX_RE.test(paging.start)) throw ledgerError(54);
  const entries = ledger.tree.entries(head.stateRoot, prefix, { start: paging.start, reverse: paging.reverse });
  const page = takePage(entries, (e) => e.address, paging);
  const data = page.items.map((e) => ({ address: e.address, data: b64(e.value) }));
  const env = pagingEnvelope(req, '/state', head.id, paging, page);
  return { status: 200, body: serialize.stateList({ data, head: head.id, ...env }) };
}

export function registerState(server: HttpServer, ledger: Ledger): void {
  server.route('get', '/state', (req) => listState(ledger, req));
  server.route('get', '/state/:address', (req) => fetchState(ledger, req));
}
