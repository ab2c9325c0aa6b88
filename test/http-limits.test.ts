/**
 * The HTTP layer under hostile clients: a slow chunked body over the size limit on each
 * interface (once ended the process), a declared oversized body, over-long request
 * targets and headers (414/431 a client can read, 60 KiB ones included), HEAD on the GET
 * routes of each interface (the GET's status, headers and length, no body, the connection
 * still usable), and handlers or websocket callbacks that throw (a logged 500 or a closed
 * socket, never the end of the process).
 */
import t, { type Test } from 'tap';
import net from 'node:net';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted } from './helpers/batches.js';
import WebSocket from 'ws';
import { startTestNode, type TestNode } from './helpers/node.js';
import { rawRequest, chunked, rawJson } from './helpers/raw.js';
import { ApiError } from '../src/http/api-error.js';
import { HttpServer, MAX_HEADER_BYTES, MAX_URL_BYTES, type Reply } from '../src/http/server.js';
import { messageErrorReply } from '../src/http/message-error.js';
import { captureStderr } from './helpers/node-api.js';

const LIMIT = 64 * 1024;
let n: TestNode;

t.before(async () => {
  n = await startTestNode({ CAIRN_MAX_BODY_BYTES: String(LIMIT) });
});
t.teardown(() => n?.stop());

interface Target {
  name: string;
  port: () => number;
  post: string;
  /** A cheap GET that answers 200. */
  ok: string;
  shape: (j: any) => boolean;
}

const ledgerShape = (j: any): boolean =>
  typeof j?.error?.code === 'number' && typeof j.error.message === 'string' && typeof j.error.title === 'string';
const messageShape = (j: any): boolean => typeof j?.message === 'string' && Object.keys(j).length === 1;

const TARGETS: Target[] = [
  { name: 'A', port: () => n.node.ports.node, post: '/biome/login', ok: '/biome/users', shape: messageShape },
  { name: 'B', port: () => n.node.ports.data, post: '/organization', ok: '/organization', shape: messageShape },
  { name: 'C', port: () => n.node.ports.ledger, post: '/batches', ok: '/blocks?limit=1', shape: ledgerShape },
];

/**
 * Requests one after another on one connection, each sent once the answer before it is
 * whole (HEAD answers have a Content-Length but no body); resolves with the answers'
 * heads and bodies, or with what came when the server closed or went silent.
 */
function sequential(port: number, requests: string[], heads: boolean[]): Promise<Array<{ head: string; body: string }>> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const out: Array<{ head: string; body: string }> = [];
    let buf = '';
    const finish = (): void => {
      clearTimeout(timer);
      s.destroy();
      resolve(out);
    };
    const timer = setTimeout(finish, 15000);
    s.on('data', (d) => {
      buf += d.toString('latin1');
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.slice(0, end);
        const len = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? '0');
        const bodyLen = heads[out.length] ? 0 : len;
        if (buf.length < end + 4 + bodyLen) return;
        out.push({ head, body: buf.slice(end + 4, end + 4 + bodyLen) });
        buf = buf.slice(end + 4 + bodyLen);
        if (out.length === requests.length) return finish();
        s.write(requests[out.length] as string);
      }
    });
    s.on('error', finish);
    s.on('close', finish);
    s.write(requests[0] as string);
  });
}

const statusOf = (head: string | undefined): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1] ?? 0);
const lengthOf = (head: string | undefined): number | undefined => {
  const m = /\r\ncontent-length: *(\d+)/i.exec(head ?? '');
  return m ? Number(m[1]) : undefined;
};

async function stillServing(t: Test, port: number): Promise<void> {
  const r = await fetch(`http://127.0.0.1:${port}/no-such-thing`);
  t.equal(r.status, 404, 'the interface still answers');
}

for (const target of TARGETS) {
  t.test(`${target.name}: a slow chunked body over the limit gets 413 and the node keeps serving`, async (t) => {
    const head = `POST ${target.post} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const r = await rawRequest(target.port(), head, chunked(LIMIT * 3, 8 * 1024), 2);
    t.equal(r.status, 413, r.text.slice(0, 100));
    t.ok(target.shape(rawJson(r)), 'error in the interface shape');
    for (const other of TARGETS) await stillServing(t, other.port());
  });

  t.test(`${target.name}: a declared Content-Length over the limit gets 413 at once`, async (t) => {
    const head = `POST ${target.post} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT * 100}\r\n\r\n`;
    const r = await rawRequest(target.port(), head, [Buffer.alloc(1024, 0x61)]);
    t.equal(r.status, 413);
    t.ok(target.shape(rawJson(r)));
    await stillServing(t, target.port());
  });

  t.test(`${target.name}: an over-long request target gets a readable 414`, async (t) => {
    const r = await rawRequest(
      target.port(),
      `GET ${target.ok}${target.ok.includes('?') ? '&' : '?'}x=${'a'.repeat(MAX_URL_BYTES + 10)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    t.equal(r.status, 414, r.text.slice(0, 100));
    t.ok(target.shape(rawJson(r)));
    // Unknown paths and wrong methods are bounded the same way.
    const r404 = await rawRequest(target.port(), `GET /nothing/${'a'.repeat(MAX_URL_BYTES + 10)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    t.equal(r404.status, 414);
    await stillServing(t, target.port());
  });

  t.test(`${target.name}: over-long headers get a readable 431`, async (t) => {
    const big = `X-Big: ${'b'.repeat(MAX_HEADER_BYTES + 10)}\r\n`;
    const r = await rawRequest(target.port(), `GET ${target.ok} HTTP/1.1\r\nHost: x\r\n${big}\r\n`);
    t.equal(r.status, 431, r.text.slice(0, 100));
    t.ok(target.shape(rawJson(r)));
    const post = await rawRequest(target.port(), `POST ${target.post} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n${big}\r\n{}`);
    t.equal(post.status, 431);
    // Just under the limits still works.
    const fine = await rawRequest(target.port(), `GET ${target.ok} HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(4000)}\r\nConnection: close\r\n\r\n`);
    t.not(fine.status, 431);
    t.not(fine.status, 0);
    await stillServing(t, target.port());
  });
}

for (const target of TARGETS) {
  t.test(`${target.name}: HEAD on a GET route answers as GET does, without the body; the connection goes on`, async (t) => {
    const get = `GET ${target.ok} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const head = `HEAD ${target.ok} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const [g, h, h404, g2] = await sequential(
      target.port(),
      [get, head, `HEAD /no-such-thing HTTP/1.1\r\nHost: x\r\n\r\n`, get],
      [false, true, true, false],
    );
    t.equal(statusOf(h?.head), statusOf(g?.head), `HEAD answers GET's status (${statusOf(g?.head)})`);
    t.not(statusOf(h?.head), 405, 'not 405');
    t.equal(lengthOf(h?.head), Buffer.byteLength(g?.body ?? '', 'latin1'), "its Content-Length is the GET body's");
    t.match(h?.head, /content-type: application\/json/i, "and GET's content type");
    t.equal(statusOf(h404?.head), 404, 'HEAD on no route: 404, without its body');
    t.equal(statusOf(g2?.head), statusOf(g?.head), 'a GET after the HEADs on the same connection is answered');
    t.equal(g2?.body, g?.body, 'whole, with its body: no stray bytes of the HEAD answers before it');
  });

  t.test(`${target.name}: a 60 KiB request line gets 414 and 60 KiB of headers 431, in the interface's shape`, async (t) => {
    // 60 KiB: a head in one loopback segment (under 64 KiB), which uWS reads whole. A head
    // it receives in several reads and cannot buffer (over about 4 KiB) is closed by uWS
    // before any of the node's code runs (docs/http-hardening.md).
    const big = 60 * 1024;
    const line = await rawRequest(
      target.port(),
      `GET ${target.ok}${target.ok.includes('?') ? '&' : '?'}q=${'a'.repeat(big)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    t.equal(line.status, 414, line.error ?? line.text.slice(0, 100));
    t.ok(target.shape(rawJson(line)), 'error in the interface shape');
    const headers = await rawRequest(target.port(), `GET ${target.ok} HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(big)}\r\n\r\n`);
    t.equal(headers.status, 431, headers.error ?? headers.text.slice(0, 100));
    t.ok(target.shape(rawJson(headers)), 'error in the interface shape');
    const head = await sequential(
      target.port(),
      [`HEAD ${target.ok}?q=${'a'.repeat(big)} HTTP/1.1\r\nHost: x\r\n\r\n`, `GET /no-such-thing HTTP/1.1\r\nHost: x\r\n\r\n`],
      [true, false],
    );
    t.equal(statusOf(head[0]?.head), 414, 'HEAD too: 414 without a body');
    t.equal(statusOf(head[1]?.head), 404, 'and the connection goes on');
    for (const other of TARGETS) await stillServing(t, other.port());
  });
}

t.test('HEAD where a route has no GET: 405 without a body, its Allow without HEAD; Allow lists HEAD beside GET', async (t) => {
  const port = n.node.ports.node;
  const [post, list, after] = await sequential(
    port,
    [
      `HEAD /biome/login HTTP/1.1\r\nHost: x\r\n\r\n`,
      `DELETE /biome/users HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /no-such-thing HTTP/1.1\r\nHost: x\r\n\r\n`,
    ],
    [true, false, false],
  );
  t.equal(statusOf(post?.head), 405);
  t.match(post?.head, /\r\nallow: POST\r\n/i, 'only POST is allowed there');
  t.equal(statusOf(list?.head), 405);
  t.match(list?.head, /\r\nallow: GET, HEAD/i, 'a GET route allows HEAD');
  t.equal(statusOf(after?.head), 404, 'the connection goes on after the bodiless 405');
});

t.test('a throwing handler, a rejected promise, an unsendable reply and throwing websocket handlers never end the process', async (t) => {
  const log = captureStderr();
  const s = new HttpServer({ name: 'probe', maxBodyBytes: 4096, errorReply: messageErrorReply });
  s.route('get', '/sync', () => {
    throw new Error('boom');
  });
  s.route('get', '/async', async () => {
    await new Promise((r) => setTimeout(r, 5));
    throw new Error('late boom');
  });
  s.route('get', '/bad-reply', () => ({ status: 200, body: undefined }) as unknown as Reply);
  s.route('get', '/bad-header', () => ({ status: 200, body: '{}', headers: { x: 5 } }) as unknown as Reply);
  s.route('post', '/echo', (req) => ({ status: 200, body: req.body }));
  s.route('get', '/http-error', () => {
    throw new ApiError(409, 'taken');
  });
  s.ws('/ws', {
    upgrade: (res, req, ctx) => {
      if (req.getQuery() === 'fail') throw new Error('upgrade boom');
      res.upgrade({}, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), ctx);
    },
    message: () => {
      throw new Error('message boom');
    },
    close: () => {
      throw new Error('close boom');
    },
  });
  const port = await s.listen('127.0.0.1', 0);
  t.teardown(async () => {
    log.restore();
    await s.close(0);
  });
  const base = `http://127.0.0.1:${port}`;
  for (const p of ['/sync', '/async', '/bad-reply', '/bad-header']) {
    const r = await fetch(base + p);
    t.equal(r.status, 500, p);
    t.same(await r.json(), { message: 'Internal server error' }, `${p}: no internals leak`);
  }
  t.equal((await fetch(`${base}/http-error`)).status, 409);
  t.match(log.text(), /unhandled error on GET \/sync/);
  t.notMatch(log.text(), /at .*server\.ts/, 'no stack at the default log level');

  const failed = await new Promise<number>((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?fail`);
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode));
    ws.on('error', () => resolve(-1));
  });
  t.equal(failed, 500, 'a throwing upgrade answers 500');

  const closeCode = await new Promise<number>((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    ws.on('open', () => ws.send('hello'));
    ws.on('close', (code) => resolve(code));
    ws.on('error', reject);
  });
  t.equal(closeCode, 1011, 'a throwing message handler closes that socket with 1011');

  const echo = await fetch(`${base}/echo`, { method: 'POST', body: 'abc' });
  t.equal(await echo.text(), 'abc', 'the server still serves');
});

t.test('request bodies held at once are bounded across the interfaces: 503 over the budget, then served again', async (t) => {
  const m = await startTestNode({ CAIRN_MAX_BODY_BYTES: String(LIMIT), CAIRN_MAX_INFLIGHT_BODY_BYTES: String(2 * LIMIT) });
  t.teardown(() => m.stop());
  const part = Buffer.alloc(LIMIT - 4096, 0x61);
  const head = (path: string): string => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT - 1}\r\n\r\n`;
  // Two slow uploads, on two interfaces, that never finish: they hold most of the budget.
  const slow = [
    rawRequest(m.node.ports.node, head('/biome/login'), [part], 2, 3000),
    rawRequest(m.node.ports.data, head('/organization'), [part], 2, 3000),
  ];
  await new Promise((r) => setTimeout(r, 500));
  const third = await rawRequest(m.node.ports.ledger, head('/batch_statuses'), [part], 2, 10000);
  t.equal(third.status, 503, third.text.slice(0, 100));
  t.ok(ledgerShape(rawJson(third)));
  t.match(third.text, /retry-after: 1/i);
  const held = await Promise.all(slow);
  t.same(
    held.map((r) => r.status),
    [0, 0],
    'the slow uploads got no answer (they never finished)',
  );
  // Their bytes are given back when they go away.
  await new Promise((r) => setTimeout(r, 200));
  const r = await fetch(`http://127.0.0.1:${m.node.ports.ledger}/batch_statuses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(['f'.repeat(128)]),
  });
  t.equal(r.status, 200);
});

t.test('pipelined requests from a client that does not read do not pile up answers in memory', async (t) => {
  // A block whose JSON is large: ~200 KB per answer of /blocks?limit=10.
  // (In batches under this node's 64 KiB body limit.)
  const ids: string[] = [];
  for (let k = 0; k < 4; k++) {
    const ops: Array<[string, string, number]> = [];
    for (let i = 0; i < 50; i++) ops.push(['set', `pipe-${k}-${i}`, i]);
    const b = intkeyBatch(newSigner(), ops);
    t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
    ids.push(b.id);
  }
  await waitCommitted(n.ledgerUrl, ids);
  const path = '/blocks?limit=10';
  const size = (await (await fetch(n.ledgerUrl + path)).text()).length;
  t.ok(size > 100_000, `answers are large (${size} bytes)`);

  const requests = 1500;
  const rss0 = process.memoryUsage().rss;
  const socks = [0, 1].map(() => {
    const s = net.connect(n.node.ports.ledger, '127.0.0.1');
    s.pause();
    s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(requests));
    return s;
  });
  await new Promise((r) => setTimeout(r, 1500));
  const grown = (process.memoryUsage().rss - rss0) / 1048576;
  t.ok(
    grown < 150,
    `the node holds little for them (${grown.toFixed(0)} MiB; all answers would be ${((2 * requests * size) / 1048576).toFixed(0)} MiB)`,
  );
  for (const s of socks) s.destroy();

  // A client that pipelines and reads gets whole answers; once an answer had to wait for
  // the socket, uWS reads no further pipelined request and closes the connection (the
  // client retries those on a new one, as pipelining clients must).
  const text = await new Promise<string>((resolve, reject) => {
    const s = net.connect(n.node.ports.ledger, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => reject(new Error('the connection neither finished nor closed')), 60000);
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
    s.on('error', () => undefined);
    s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(30));
  });
  const answers = text.split(/HTTP\/1\.1 200 OK\r\n/).slice(1);
  t.ok(answers.length >= 1, `${answers.length} answers before the close`);
  for (const a of answers.slice(0, -1)) t.ok(JSON.parse(a.slice(a.indexOf('\r\n\r\n') + 4)).data.length > 0, 'a whole answer');

  // A keep-alive client that reads slowly, one request at a time, gets every answer.
  const count = await new Promise<number>((resolve, reject) => {
    const s = net.connect(n.node.ports.ledger, '127.0.0.1');
    let buf = '';
    let done = 0;
    s.on('error', reject);
    s.on('data', (d) => {
      buf += d.toString('latin1');
      s.pause();
      setTimeout(() => s.resume(), 2);
      const m = /content-length: *(\d+)\r\n/i.exec(buf);
      const start = buf.indexOf('\r\n\r\n') + 4;
      if (!m || start < 4 || buf.length - start < Number(m[1])) return;
      JSON.parse(buf.slice(start, start + Number(m[1])));
      buf = buf.slice(start + Number(m[1]));
      if (++done === 10) {
        s.destroy();
        return resolve(done);
      }
      s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
    });
    s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  });
  t.equal(count, 10);
});
