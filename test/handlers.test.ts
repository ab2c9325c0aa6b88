/**
 * Route handlers of the three interfaces called as plain functions: no HTTP server in
 * between, a request snapshot in, a typed answer (or an ApiError) out. The node behind
 * them is real (ledger, stores), only the transport is left out. Also the route plumbing
 * itself: named parameters, compiled serialisers and the reply check the tests turn on.
 */
import t, { type Test } from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import { ApiError } from '../src/http/api-error.js';
import type { Req } from '../src/http/server.js';
import {
  ANY_JSON,
  answer,
  paramNames,
  runRoute,
  serializer,
  setReplyCheck,
  toReply,
  type Answer,
  type Outcome,
  type RouteSpec,
} from '../src/http/route.js';
import { ledgerApiRoutes } from '../src/ledger-api/index.js';
import { LedgerErrorCode } from '../src/ledger-api/errors.js';
import { nodeApiRoutes } from '../src/node-api/index.js';
import { Router, type Caller } from '../src/node-api/router.js';
import { dataApiRoutes } from '../src/data-api/index.js';
import type { DataCaller } from '../src/data-api/router.js';
import type { Identity } from '../src/auth/identity.js';

interface Snapshot {
  query?: string;
  params?: string[];
  headers?: Record<string, string>;
  body?: unknown;
}

/** A request snapshot as the server makes one (src/http/server.ts). */
function request(method: string, path: string, s: Snapshot = {}): Req {
  const body = s.body === undefined ? Buffer.alloc(0) : Buffer.from(typeof s.body === 'string' ? s.body : JSON.stringify(s.body));
  const headers: Record<string, string> = {
    host: 'node.test',
    ...(s.body !== undefined && typeof s.body !== 'string' ? { 'content-type': 'application/json' } : {}),
    ...s.headers,
  };
  return {
    method,
    path,
    rawQuery: s.query ?? '',
    query: new URLSearchParams(s.query ?? ''),
    headers,
    params: s.params ?? [],
    body,
    aborted: false,
    remoteAddress: '127.0.0.1',
  };
}

function find<S extends RouteSpec<any, any>>(routes: readonly S[], method: string, path: string): S {
  const r = routes.find((x) => x.method === method && x.path === path);
  if (!r) throw new Error(`no route ${method} ${path}`);
  return r;
}

/** Runs a route's parsers and handler with the given caller context (no authentication hook). */
function run<C extends object>(route: RouteSpec<C, any>, ctx: C, req: Req): Promise<Outcome> {
  return runRoute<C, RouteSpec<C, any>>({ enter: () => ctx }, route, req);
}

async function value(p: Promise<Outcome>): Promise<any> {
  const out = await p;
  if ('value' in out) return (out as Answer).value;
  // A ready reply (block pages are written from cached JSON bytes): its body is the JSON.
  if (out.contentType !== undefined && !out.contentType.startsWith('application/json')) throw new Error('not a JSON answer');
  return JSON.parse(Buffer.from(out.body).toString('utf8'));
}

async function refused(t: Test, p: Promise<unknown>, status: number, code?: number): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof ApiError, 'an ApiError');
  const e = err as ApiError;
  t.equal(e.status, status, `status ${status}`);
  if (code !== undefined) t.equal(e.code, code, `code ${code}`);
  return e;
}

let node: TestNode;
t.before(async () => {
  node = await startTestNode();
});
t.teardown(() => node.stop());

t.test('ledger gateway handlers', async (t) => {
  const { routes, waits } = ledgerApiRoutes({ config: node.node.config, ledger: node.node.ledger });
  t.teardown(() => waits.close());
  const list = await value(run(find(routes, 'get', '/blocks'), {}, request('GET', '/blocks')));
  t.equal(list.data.length, 1, 'genesis only');
  t.equal(list.data[0].header.block_num, '0');
  t.equal(list.paging.limit, null);
  const genesis: string = list.data[0].header_signature;

  const one = await value(run(find(routes, 'get', '/blocks/:block_id'), {}, request('GET', `/blocks/${genesis}`, { params: [genesis] })));
  t.equal(one.data.header_signature, genesis);
  t.equal(one.link, `http://node.test/blocks/${genesis}`);

  await refused(
    t,
    run(find(routes, 'get', '/blocks/:block_id'), {}, request('GET', '/blocks/abc', { params: ['abc'] })),
    400,
    LedgerErrorCode.InvalidResourceId,
  );
  const zeros = '0'.repeat(128);
  await refused(
    t,
    run(find(routes, 'get', '/blocks/:block_id'), {}, request('GET', `/blocks/${zeros}`, { params: [zeros] })),
    404,
    LedgerErrorCode.BlockNotFound,
  );
  // The query parser runs before the handler: a missing `id` is the parser's error.
  await refused(t, run(find(routes, 'get', '/batch_statuses'), {}, request('GET', '/batch_statuses')), 400, LedgerErrorCode.StatusIdQueryInvalid);
  await refused(
    t,
    run(find(routes, 'post', '/batch_statuses'), {}, request('POST', '/batch_statuses', { body: 'x', headers: { 'content-type': 'text/plain' } })),
    400,
    LedgerErrorCode.WrongContentTypeStatuses,
  );
  const statuses = await value(run(find(routes, 'post', '/batch_statuses'), {}, request('POST', '/batch_statuses', { body: [zeros] })));
  t.same(statuses, { data: [{ id: zeros, invalid_transactions: [], status: 'UNKNOWN' }] });

  // The compiled serialiser writes the answer with keys sorted and nothing dropped.
  const write = serializer(find(routes, 'get', '/blocks').reply);
  const text = write(list);
  t.same(JSON.parse(text), JSON.parse(JSON.stringify(list)));
  t.match(text, /^\{"data":\[\{"batches":/);
});

t.test('node API handlers', async (t) => {
  const { config, db, nodeSigner, adminSigner } = node.node;
  const { routes } = nodeApiRoutes({ config, db, nodeSigner, adminSigner, version: 'test' });
  const admin: Caller = { identity: { kind: 'key', publicKey: adminSigner.publicKey }, version: 2 };
  const anonymous: Caller = { identity: null, version: 2 };

  const perms = await value(run(find(routes, 'get', '/authorization/permissions'), admin, request('GET', '/authorization/permissions')));
  t.ok(perms.data.some((p: { permission_id: string }) => p.permission_id === 'status.read'));

  const status = await value(run(find(routes, 'get', '/status'), admin, request('GET', '/status')));
  t.equal(status.version, 'test');
  t.match(status.node_id, /^cairn-/);

  const reg = await value(
    run(
      find(routes, 'post', '/biome/register'),
      anonymous,
      request('POST', '/biome/register', { body: { username: 'direct', hashed_password: 'pw' } }),
    ),
  );
  t.equal(reg.message, 'User created successfully');
  const userId: string = reg.data.user_id;
  const user = await value(run(find(routes, 'get', '/biome/users/:user_id'), admin, request('GET', `/biome/users/${userId}`, { params: [userId] })));
  t.same(user, { username: 'direct', user_id: userId });

  // Keys belong to users: a key identity is refused by the handler itself.
  await refused(t, run(find(routes, 'get', '/biome/keys'), admin, request('GET', '/biome/keys')), 403);
  const asUser: Caller = { identity: { kind: 'user', userId, via: 'biome' } as Identity, version: 2 };
  t.same(await value(run(find(routes, 'get', '/biome/keys'), asUser, request('GET', '/biome/keys'))), []);
  // The body is checked before anything is stored.
  const e = await refused(t, run(find(routes, 'post', '/biome/keys'), asUser, request('POST', '/biome/keys', { body: '{' })), 400);
  t.match(e.message, /^Malformed JSON body/);
  await refused(t, run(find(routes, 'get', '/biome/users/:user_id'), admin, request('GET', '/biome/users/nobody', { params: ['nobody'] })), 404);
});

t.test('data API handlers', async (t) => {
  const { config, db, ledger, nodeSigner } = node.node;
  const { routes, backends, auth } = dataApiRoutes({ config, db, ledger, nodeSigner });
  t.equal(auth, null, 'authorization is off on loopback');
  const ctx = (req: Req): DataCaller => ({ identity: null, be: backends.forRequest(req) });
  const call = (method: string, path: string, req: Req): Promise<Outcome> => run(find(routes, method, path), ctx(req), req);

  const empty = await value(call('get', '/organization', request('GET', '/organization', { query: 'limit=5' })));
  t.same(empty, {
    data: [],
    paging: {
      current: '/organization?limit=5&offset=0',
      offset: 0,
      limit: 5,
      total: 0,
      first: '/organization?limit=5&offset=0',
      last: '/organization?limit=5&offset=0',
    },
  });

  const e = await refused(t, call('get', '/organization/:id', request('GET', '/organization/acme', { params: ['acme'] })), 404);
  t.equal(e.message, 'Organization acme not found');
  const bad = await refused(t, call('post', '/organization', request('POST', '/organization', { body: { data: [{ id: 'acme' }] } })), 400);
  t.equal(bad.message, '`data[0].name` is required');
  const limit = await refused(t, call('get', '/product', request('GET', '/product', { query: 'limit=0' })), 400);
  t.match(limit.message, /^`limit` must be an integer/);

  const made = await call(
    'post',
    '/organization',
    request('POST', '/organization', { body: { data: [{ id: 'acme', name: 'Acme' }] }, query: 'wait=30' }),
  );
  t.equal((made as Answer).status, 200);
  t.equal((made as Answer<{ status: string }>).value.status, 'COMMITTED');
  const org = await value(call('get', '/organization/:id', request('GET', '/organization/acme', { params: ['acme'] })));
  t.equal(org.name, 'Acme');
  // The record's compiled serialiser keeps every field.
  t.same(JSON.parse(serializer(find(routes, 'get', '/organization/:id').reply)(org)), org);
});

t.test('route plumbing', async (t) => {
  t.same(paramNames('/organization/:org_id/agent/:public_key'), ['org_id', 'public_key']);
  const route: RouteSpec = {
    method: 'get',
    path: '/thing/:id',
    reply: { type: 'object', properties: { id: { type: 'string' } } },
    handler: ({ params }) => answer({ id: params.id, extra: 1 }),
  };
  const out = await runRoute({ enter: () => ({}) }, route, request('GET', '/thing/x', { params: ['x'] }));
  // A schema that leaves a field out is caught while the check is on (as in every test) ...
  t.throws(() => toReply(route, serializer(route.reply), out), /changes the reply/);
  // ... and without the check the field is silently dropped, which is what it guards against.
  setReplyCheck(false);
  t.teardown(() => setReplyCheck(true));
  t.equal(toReply(route, serializer(route.reply), out).body, '{"id":"x"}');
  t.equal(serializer(ANY_JSON), serializer(ANY_JSON), 'compiled once');

  // Ready replies (redirects) pass through untouched.
  const redirect = { status: 302, body: '', contentType: 'text/plain', headers: { location: '/x' } };
  t.equal(toReply(route, serializer(route.reply), redirect), redirect);

  // The node API's positional shorthands declare the same route specs.
  const r = new Router();
  r.public('get', '/a', () => answer({}));
  r.secured('get', '/b', 'status.read', () => answer({}), 2);
  t.match(r.routes, [
    { method: 'get', path: '/a', permission: 'public', reply: ANY_JSON, minVersion: 1 },
    { method: 'get', path: '/b', permission: 'status.read', reply: ANY_JSON, minVersion: 2 },
  ]);
});
