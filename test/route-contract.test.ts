/**
 * The route contract (src/http/route.ts): a route declared with defineRoute (or the node
 * API's Router.add, the data API's DataRouter.route) gets its path parameters by name and
 * its query and body from its own parsers, typed; a parser's ApiError refuses the request
 * before the handler runs. The type checks are part of the test: `npm run typecheck` fails
 * if a handler could read a parameter its path does not have, or a field its parser does
 * not return (the @ts-expect-error lines).
 */
import t from 'tap';
import { ApiError } from '../src/http/api-error.js';
import type { Req } from '../src/http/server.js';
import { answer, defineRoute, paramNames, runRoute, type Answer, type Outcome, type Params } from '../src/http/route.js';
import { Router } from '../src/node-api/router.js';
import { DataRouter } from '../src/data-api/router.js';

function request(path: string, params: string[], query = '', body = ''): Req {
  return {
    method: 'POST',
    path,
    rawQuery: query,
    query: new URLSearchParams(query),
    headers: {},
    params,
    body: Buffer.from(body),
    aborted: false,
    remoteAddress: '127.0.0.1',
  };
}

async function answerOf(p: Promise<Outcome>): Promise<unknown> {
  return ((await p) as Answer).value;
}

const route = defineRoute<{ who: string }>();

t.test('named path parameters, typed from the path', async (t) => {
  const both: Params<'/organization/:org_id/agent/:public_key'> = { org_id: 'o', public_key: 'k' };
  t.same(both, { org_id: 'o', public_key: 'k' });
  t.same(paramNames('/organization/:org_id/agent/:public_key'), ['org_id', 'public_key']);
  const r = route({
    method: 'get',
    path: '/organization/:org_id/agent/:public_key',
    reply: {},
    handler: ({ params, who }) => {
      // @ts-expect-error: the path has no :nope
      const nope: string = params.nope;
      return answer({ org: params.org_id, key: params.public_key, who, nope });
    },
  });
  // Values as the server decoded them, hostile ones included: a handler sees them as sent.
  const out = await answerOf(runRoute({ enter: () => ({ who: 'me' }) }, r, request('/organization/x', ['../acme', '__proto__'])));
  t.same(out, { org: '../acme', key: '__proto__', who: 'me' });
  const none = route({ method: 'get', path: '/plain', reply: {}, handler: ({ params }) => answer(Object.keys(params)) });
  t.same(await answerOf(runRoute({ enter: () => ({ who: 'me' }) }, none, request('/plain', []))), []);
});

t.test("query and body come from the route's parsers, typed", async (t) => {
  let ran = 0;
  const r = route({
    method: 'post',
    path: '/things/:id',
    query: (req) => {
      const n = Number(req.query.get('n') ?? '1');
      if (!Number.isInteger(n) || n < 1) throw new ApiError(400, '`n` must be a positive integer');
      return { n };
    },
    body: (req) => {
      const text = req.body.toString('utf8');
      if (text === '') throw new ApiError(400, 'A body is required');
      return text.split(',');
    },
    reply: {},
    handler: ({ params, query, body }) => {
      ran++;
      // @ts-expect-error: the query parser returns no `m`
      const m: number = query.m;
      return answer({ id: params.id, n: query.n * 2, items: body.length, m });
    },
  });
  const enter = { enter: () => ({ who: 'me' }) };
  t.same(await answerOf(runRoute(enter, r, request('/things/a', ['a'], 'n=3', 'x,y'))), { id: 'a', n: 6, items: 2 });
  t.equal(ran, 1);

  // A parser's refusal is the answer; the handler does not run. The query is read first.
  const refused = async (req: Req, message: string): Promise<void> => {
    const err = await runRoute(enter, r, req).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof ApiError, message);
    t.equal((err as ApiError).status, 400);
    t.equal((err as ApiError).message, message);
  };
  await refused(request('/things/a', ['a'], 'n=0', 'x'), '`n` must be a positive integer');
  await refused(request('/things/a', ['a'], 'n=2', ''), 'A body is required');
  await refused(request('/things/a', ['a'], 'n=-1', ''), '`n` must be a positive integer');
  t.equal(ran, 1, 'the handler ran only for the good request');
});

t.test('without parsers the handler gets the raw query and bytes', async (t) => {
  const r = route({
    method: 'post',
    path: '/raw',
    reply: {},
    handler: ({ query, body }) => answer({ q: query.get('q'), bytes: body.byteLength }),
  });
  t.same(await answerOf(runRoute({ enter: () => ({ who: 'me' }) }, r, request('/raw', [], 'q=1', 'abc'))), { q: '1', bytes: 3 });
});

t.test("the interfaces' route tables declare typed routes", async (t) => {
  const node = new Router();
  node.add({
    method: 'get',
    path: '/n/:name',
    permission: 'authenticated',
    reply: {},
    // A secured route's caller is known: identity is not null here.
    handler: ({ identity, params }) => answer({ kind: identity.kind, name: params.name }),
  });
  node.add({
    method: 'get',
    path: '/p',
    permission: 'public',
    reply: {},
    // @ts-expect-error: a public route's identity may be null
    handler: ({ identity }) => answer(identity.kind),
  });
  t.equal(node.routes.length, 2);
  const [secured] = node.routes;
  if (!secured) throw new Error('no route');
  const out = await answerOf(
    runRoute({ enter: () => ({ identity: { kind: 'key' as const, publicKey: 'ab' }, version: 2 as const }) }, secured, request('/n/x', ['x'])),
  );
  t.same(out, { kind: 'key', name: 'x' });

  const data = new DataRouter();
  data.route({
    method: 'get',
    path: '/d/:id',
    query: (req) => req.query.getAll('tag'),
    reply: {},
    handler: ({ params, query }) => answer({ id: params.id, tags: query }),
  });
  t.equal(data.routes.length, 1);
  t.equal(data.routes[0]?.path, '/d/:id');
});

t.test('a load step refuses before the parsers, and its result is typed for parsers and handler', async (t) => {
  const shelves = new Map([['a', { name: 'A', max: 2 }]]);
  const order: string[] = [];
  const r = route({
    method: 'post',
    path: '/shelf/:shelf_id/item',
    load: async ({ params, who }) => {
      order.push('load');
      const shelf = shelves.get(params.shelf_id);
      if (shelf === undefined) throw new ApiError(404, `Shelf ${params.shelf_id} not found (asked by ${who})`);
      return shelf;
    },
    // The parsers' second argument is what load returned (here inferred, not annotated).
    query: (req, shelf) => {
      order.push('query');
      const n = Number(req.query.get('n') ?? '1');
      if (!(n >= 1 && n <= shelf.max)) throw new ApiError(400, `\`n\` must be 1 to ${shelf.max}`);
      return n;
    },
    body: (req, shelf) => {
      order.push('body');
      if (req.body.length === 0) throw new ApiError(400, `A body is required for ${shelf.name}`);
      return req.body.toString('utf8');
    },
    reply: {},
    handler: ({ loaded, query, body }) => {
      order.push('handler');
      // @ts-expect-error: the load step returns no `size`
      const size: number = loaded.size;
      return answer({ shelf: loaded.name, n: query, item: body, size });
    },
  });
  const enter = { enter: () => ({ who: 'me' }) };
  t.same(await answerOf(runRoute(enter, r, request('/shelf/a/item', ['a'], 'n=2', 'pen'))), { shelf: 'A', n: 2, item: 'pen' });
  t.same(order, ['load', 'query', 'body', 'handler']);

  const refusal = async (req: Req): Promise<ApiError> => {
    order.length = 0;
    const err = await runRoute(enter, r, req).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof ApiError)) throw new Error('not refused');
    return err;
  };
  // Wrong twice (no such shelf, bad n, no body): the load step's 404 is the answer, as it
  // was when the lookup came first in the handler; the parsers never ran.
  const both = await refusal(request('/shelf/zz/item', ['zz'], 'n=9', ''));
  t.same([both.status, both.message, order], [404, 'Shelf zz not found (asked by me)', ['load']]);
  const bad = await refusal(request('/shelf/a/item', ['a'], 'n=3', ''));
  t.same([bad.status, bad.message, order], [400, '`n` must be 1 to 2', ['load', 'query']]);
  const empty = await refusal(request('/shelf/a/item', ['a'], 'n=1', ''));
  t.same([empty.status, empty.message, order], [400, 'A body is required for A', ['load', 'query', 'body']]);
  // The enter hook's refusal still comes before all of it.
  order.length = 0;
  const denied = await runRoute(
    {
      enter: () => {
        throw new ApiError(401, 'no');
      },
    },
    r,
    request('/shelf/zz/item', ['zz']),
  ).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.equal((denied as ApiError).status, 401);
  t.same(order, []);

  // Without a load step the handler's `loaded` is undefined.
  const plain = route({ method: 'get', path: '/plain', reply: {}, handler: ({ loaded }) => answer({ loaded: loaded === undefined }) });
  t.same(await answerOf(runRoute(enter, plain, request('/plain', []))), { loaded: true });
});

t.test("the node API's load step sees the secured caller", async (t) => {
  const node = new Router();
  node.add({
    method: 'post',
    path: '/u/:name',
    permission: 'authenticated',
    load: ({ identity }) => {
      if (identity.kind !== 'user') throw new ApiError(403, 'users only');
      return { user: identity.userId };
    },
    body: (req, me) => ({ text: req.body.toString('utf8'), by: me.user }),
    reply: {},
    handler: ({ loaded, body, params }) => answer({ user: loaded.user, body, name: params.name }),
  });
  const [r] = node.routes;
  if (!r) throw new Error('no route');
  const asUser = { enter: () => ({ identity: { kind: 'user' as const, userId: 'u1', via: 'biome' as const }, version: 2 as const }) };
  t.same(await answerOf(runRoute(asUser, r, request('/u/x', ['x'], '', 'hi'))), { user: 'u1', body: { text: 'hi', by: 'u1' }, name: 'x' });
  const asKey = { enter: () => ({ identity: { kind: 'key' as const, publicKey: 'ab' }, version: 2 as const }) };
  const err = await runRoute(asKey, r, request('/u/x', ['x'])).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.same([(err as ApiError).status, (err as ApiError).message], [403, 'users only']);
});
