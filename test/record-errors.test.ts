/**
 * The record stores' errors (src/store/record-errors.ts) and their answers: each kind keeps
 * its message and gets its HTTP status (src/http/record-errors.ts), and a node API route
 * answers them whether its handler throws at once or later, while other errors pass unchanged.
 */
import t from 'tap';
import { ApiError } from '../src/http/api-error.js';
import { recordErrorAnswer } from '../src/http/record-errors.js';
import { messageErrorReply } from '../src/http/message-error.js';
import { answer, runRoute, ANY_JSON } from '../src/http/route.js';
import type { Req } from '../src/http/server.js';
import { Router, type Caller } from '../src/node-api/router.js';
import { Conflict, Denied, Invalid, NotFound, RecordError } from '../src/store/record-errors.js';

const req: Req = {
  method: 'GET',
  path: '/x',
  rawQuery: '',
  query: new URLSearchParams(),
  headers: { host: 'node.test' },
  params: [],
  body: Buffer.alloc(0),
  aborted: false,
  remoteAddress: '127.0.0.1',
};

t.test('each kind has its status, the message is kept byte for byte', async (t) => {
  const odd = 'Role "r\\n\u00e9\u{1f600}" <x> already exists';
  for (const [err, status] of [
    [new NotFound(odd), 404],
    [new Conflict(odd), 409],
    [new Invalid(odd), 400],
    [new Denied(odd), 401],
  ] as const) {
    t.ok(err instanceof RecordError);
    const a = recordErrorAnswer(err);
    t.ok(a instanceof ApiError, `${err.kind} becomes an ApiError`);
    t.equal((a as ApiError).status, status, err.kind);
    t.equal((a as ApiError).message, odd);
    t.equal((a as ApiError).headers, undefined);
    t.equal(messageErrorReply(status, (a as ApiError).message).body, JSON.stringify({ message: odd }));
  }
});

t.test('anything else passes through as it is', async (t) => {
  const plain = new Error('disk on fire');
  t.equal(recordErrorAnswer(plain), plain);
  const api = new ApiError(418, 'teapot');
  t.equal(recordErrorAnswer(api), api);
  t.equal(recordErrorAnswer('a string'), 'a string');
  t.equal(recordErrorAnswer(null), null);
  // Something that only looks like a record error is not one.
  const lookalike = Object.assign(new Error('x'), { kind: 'not-found' });
  t.equal(recordErrorAnswer(lookalike), lookalike);
});

t.test('node API routes answer record errors, thrown at once or later', async (t) => {
  const router = new Router();
  const binding = { enter: (): Caller => ({ identity: null, version: 2 }) };
  router.public('get', '/sync', () => {
    throw new Conflict('Username already in use: a');
  });
  router.public('get', '/async', async () => {
    await new Promise((r) => setImmediate(r));
    throw new NotFound('User ID not found: b');
  });
  router.public('get', '/other', () => {
    throw new RangeError('not a record error');
  });
  router.add({ method: 'get', path: '/fine', permission: 'public', reply: ANY_JSON, handler: () => answer({ ok: true }) });
  router.add({
    method: 'post',
    path: '/parsed',
    permission: 'public',
    reply: ANY_JSON,
    body: () => {
      throw new Invalid('`endpoints` must not be empty');
    },
    handler: () => answer({ ok: true }),
  });
  const route = (path: string) => {
    const r = router.routes.find((x) => x.path === path);
    if (!r) throw new Error(path);
    return r;
  };
  const sync = await runRoute(binding, route('/sync'), req).catch((e: unknown) => e);
  t.ok(sync instanceof ApiError);
  t.match(sync, { status: 409, message: 'Username already in use: a' });
  const later = await runRoute(binding, route('/async'), req).catch((e: unknown) => e);
  t.match(later, { status: 404, message: 'User ID not found: b' });
  t.ok(later instanceof ApiError);
  const other = await runRoute(binding, route('/other'), req).catch((e: unknown) => e);
  t.ok(other instanceof RangeError, 'other errors are not turned into answers');
  t.same(await runRoute(binding, route('/fine'), req), answer({ ok: true }));
  const parsed = await runRoute(binding, route('/parsed'), req).catch((e: unknown) => e);
  t.ok(parsed instanceof ApiError, "a body parser's record error too");
  t.match(parsed, { status: 400, message: '`endpoints` must not be empty' });
});
