/**
 * Bounds of the /subscriptions websocket: a socket that does not read is closed once its
 * buffer is full (it used to hold up to 16 MiB each, for any number of sockets), the
 * number of sockets is capped (503 on upgrade), frames in are capped, and a repeated
 * `subscribe` does not resend the delta the socket already has.
 */
import t from 'tap';
import WebSocket from 'ws';
import { startTestNode, type TestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted } from './helpers/batches.js';
import { MAX_FRAME_BYTES } from '../src/ledger-api/subscriptions.js';

const MAX_SOCKETS = 4;
let n: TestNode;
let wsUrl: string;
/** A block with many state changes, so that its delta frame is large. */
let bigBlockId: string;

t.before(async () => {
  n = await startTestNode({ CAIRN_WS_MAX_SOCKETS: String(MAX_SOCKETS), CAIRN_WS_MAX_BUFFERED_BYTES: String(64 * 1024) });
  wsUrl = `${n.ledgerUrl.replace(/^http/, 'ws')}/subscriptions`;
  const signer = newSigner();
  const ops: Array<[string, string, number]> = [];
  for (let i = 0; i < 100; i++) ops.push(['set', `wide-${i}`, i]);
  const b = intkeyBatch(signer, ops);
  await postBatches(n.ledgerUrl, batchList(b));
  const [st] = await waitCommitted(n.ledgerUrl, [b.id]);
  if (st.status !== 'COMMITTED') throw new Error('setup batch not committed');
  const blocks = (await (await fetch(`${n.ledgerUrl}/blocks?limit=1`)).json()) as { data: Array<{ header_signature: string }> };
  bigBlockId = blocks.data[0]!.header_signature;
});
t.teardown(() => n?.stop());

function open(url = wsUrl): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.on('open', () => resolve(ws));
    ws.on('unexpected-response', (_req, res) => reject(new Error(`status ${res.statusCode}`)));
    ws.on('error', reject);
  });
}

function closed(ws: WebSocket, ms = 60000): Promise<number> {
  return new Promise((resolve, reject) => {
    if (ws.readyState === 3) return resolve(-1);
    const timer = setTimeout(() => reject(new Error('socket not closed')), ms);
    ws.on('close', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

t.test('a socket that does not read is closed once its buffer is full; others are served', async (t) => {
  const slow = await open();
  const good = await open();
  t.teardown(() => {
    slow.terminate();
    good.close();
  });
  let got = 0;
  slow.on('message', () => got++);
  slow.pause();
  const asks = 1500;
  const req = JSON.stringify({ action: 'get_block_deltas', block_id: bigBlockId });
  for (let i = 0; i < asks; i++) slow.send(req);
  // Once the kernel buffers are full the node stops buffering for this socket and closes it.
  const code = closed(slow);
  slow.resume();
  t.ok((await code) > 0, 'the server closed the socket');
  t.ok(got < asks, `only part of the frames came (${got} of ${asks})`);
  // Another socket still works.
  const frame = new Promise<string>((resolve) => good.once('message', (d) => resolve(d.toString())));
  good.send(JSON.stringify({ action: 'get_block_deltas', block_id: bigBlockId, address_prefixes: ['1cf126'] }));
  t.equal(JSON.parse(await frame).block_id, bigBlockId);
});

t.test('sockets are capped: the next upgrade gets 503 until one closes', async (t) => {
  const socks: WebSocket[] = [];
  t.teardown(() => {
    for (const s of socks) s.terminate();
  });
  for (let i = 0; i < MAX_SOCKETS; i++) socks.push(await open());
  const refused = await new Promise<{ status: number; body: string }>((resolve) => {
    const ws = new WebSocket(wsUrl);
    ws.on('unexpected-response', (_req, res: any) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    ws.on('open', () => resolve({ status: 101, body: '' }));
    ws.on('error', () => undefined);
  });
  t.equal(refused.status, 503);
  t.match(JSON.parse(refused.body), { error: { code: 503, message: /Too many open subscriptions/ } });
  const one = socks.pop()!;
  const gone = closed(one);
  one.close();
  await gone;
  // The server sees the close a moment later.
  let again: WebSocket | undefined;
  for (let i = 0; i < 50 && !again; i++) {
    again = await open().catch(() => undefined);
    if (!again) await new Promise((r) => setTimeout(r, 50));
  }
  t.ok(again, 'a socket opens again');
  if (again) socks.push(again);
});

t.test('a repeated subscribe does not resend the same delta', async (t) => {
  const ws = await open();
  t.teardown(() => ws.close());
  const frames: string[] = [];
  ws.on('message', (d) => frames.push(d.toString()));
  for (let i = 0; i < 200; i++) ws.send(JSON.stringify({ action: 'subscribe', address_prefixes: ['1cf126'] }));
  // A different filter is a different delta: sent once.
  ws.send(JSON.stringify({ action: 'subscribe', address_prefixes: [] }));
  ws.send(JSON.stringify({ action: 'subscribe', address_prefixes: [] }));
  // get_block_deltas as a marker that every subscribe before it was handled.
  ws.send(JSON.stringify({ action: 'get_block_deltas', block_id: 'f'.repeat(128) }));
  for (let i = 0; i < 100 && !frames.some((f) => f.includes('Unknown block id')); i++) await new Promise((r) => setTimeout(r, 50));
  const deltas = frames.filter((f) => f.includes('"block_id"'));
  t.equal(deltas.length, 2, 'one delta per distinct subscription');
  // New blocks still come.
  const b = intkeyBatch(newSigner(), [['set', 'fresh-1', 1]]);
  await postBatches(n.ledgerUrl, batchList(b));
  await waitCommitted(n.ledgerUrl, [b.id]);
  for (let i = 0; i < 100 && frames.filter((f) => f.includes('"block_id"')).length < 3; i++) await new Promise((r) => setTimeout(r, 50));
  t.equal(frames.filter((f) => f.includes('"block_id"')).length, 3, 'the next block is pushed');
  // And after it, a subscribe sends the new head's delta once.
  ws.send(JSON.stringify({ action: 'subscribe', address_prefixes: ['1cf126'] }));
  for (let i = 0; i < 100 && frames.filter((f) => f.includes('"block_id"')).length < 4; i++) await new Promise((r) => setTimeout(r, 50));
  t.equal(frames.filter((f) => f.includes('"block_id"')).length, 4);
});

t.test('frames over the size limit close the socket', async (t) => {
  const ws = await open();
  const prefixes = Array.from({ length: Math.ceil(MAX_FRAME_BYTES / 8) + 10 }, () => '1cf126');
  const code = closed(ws, 10000);
  ws.send(JSON.stringify({ action: 'subscribe', address_prefixes: prefixes }));
  // uWS drops the connection (1006 at the client) rather than sending 1009.
  t.ok([1006, 1009].includes(await code), `closed (${await code})`);
  const small = await open();
  small.close();
});
