/**
 * GET /subscriptions, the state-delta websocket: subscribe with address prefixes, get the
 * current block's delta at once, then a block-commit event with the state changes of a
 * batch this test submitted, filtered by prefix; get_block_deltas; unsubscribe; bad frames.
 */
import t from 'tap';
import WebSocket from 'ws';
import { startTestNode, type TestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted } from './helpers/batches.js';
import { get } from './helpers/ledger-api.js';
import { intkeyAddress } from '../src/families/intkey.js';
import { decode } from '../src/codec/cbor.js';

/** A websocket client that queues the frames it receives. */
class Client {
  readonly ws: WebSocket;
  readonly #frames: string[] = [];
  readonly #wanted: Array<(f: string) => void> = [];

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.on('message', (data) => {
      const f = data.toString('utf8');
      const w = this.#wanted.shift();
      if (w) w(f);
      else this.#frames.push(f);
    });
  }

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ws.on('open', resolve);
      this.ws.on('error', reject);
    });
  }

  send(o: unknown): void {
    this.ws.send(typeof o === 'string' ? o : JSON.stringify(o));
  }

  /** The next frame (raw text), or a rejection after `ms`. */
  next(ms = 5000): Promise<string> {
    const f = this.#frames.shift();
    if (f !== undefined) return Promise.resolve(f);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#wanted.splice(this.#wanted.indexOf(done), 1);
        reject(new Error('no frame'));
      }, ms);
      const done = (x: string): void => {
        clearTimeout(timer);
        resolve(x);
      };
      this.#wanted.push(done);
    });
  }

  get queued(): number {
    return this.#frames.length;
  }
}

let n: TestNode;
let wsUrl: string;

t.before(async () => {
  n = await startTestNode();
  wsUrl = `${n.ledgerUrl.replace(/^http/, 'ws')}/subscriptions`;
});
t.teardown(() => n?.stop());

t.test('a subscriber receives the block-commit event of a batch it submitted', async (t) => {
  const signer = newSigner();
  const c = new Client(wsUrl);
  const all = new Client(wsUrl);
  await Promise.all([c.open(), all.open()]);
  t.teardown(() => {
    c.ws.close();
    all.ws.close();
  });
  const a = intkeyAddress('ws-a');
  c.send({ action: 'subscribe', address_prefixes: [a.slice(0, 10), '000000'] });
  all.send({ action: 'subscribe' });

  // At once: the current head's delta (genesis: its settings changes).
  const head0 = (await get(`${n.ledgerUrl}/blocks?limit=1`)).json.data[0];
  const first = JSON.parse(await c.next());
  t.same(Object.keys(first), ['block_id', 'block_num', 'previous_block_id', 'state_changes']);
  t.equal(first.block_id, head0.header_signature);
  t.equal(first.block_num, '0', 'block_num as a string');
  t.equal(first.previous_block_id, '0000000000000000');
  t.ok(first.state_changes.length > 0);
  t.ok(first.state_changes.every((s: any) => s.address.startsWith('000000') && s.type === 'SET'));
  await all.next();

  const b = intkeyBatch(signer, [
    ['set', 'ws-a', 7],
    ['set', 'ws-b', 8],
    ['inc', 'ws-a', 2],
  ]);
  t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
  const raw = await c.next();
  t.notMatch(raw, /\n/, 'compact JSON');
  const ev = JSON.parse(raw);
  const block = (await get(`${n.ledgerUrl}/blocks?limit=1`)).json.data[0];
  t.same(block.header.batch_ids, [b.id], 'the block holds our batch');
  t.same(
    ev,
    {
      block_id: block.header_signature,
      block_num: '1',
      previous_block_id: head0.header_signature,
      state_changes: [{ address: a, type: 'SET', value: ev.state_changes[0]?.value }],
    },
    'only the changes under the prefixes; the last change per address',
  );
  t.same([...(decode(Buffer.from(ev.state_changes[0].value, 'base64')) as Map<string, number>)], [['ws-a', 9]]);
  const evAll = JSON.parse(await all.next());
  t.same(
    evAll.state_changes.map((s: any) => s.address),
    [a, intkeyAddress('ws-b')],
    'every change, in reverse order of occurrence',
  );
  t.equal(evAll.block_id, block.header_signature);

  // A block with nothing under the prefixes still comes, with no changes.
  const other = intkeyBatch(signer, [['set', 'ws-z', 1]]);
  await postBatches(n.ledgerUrl, batchList(other));
  const ev2 = JSON.parse(await c.next());
  t.equal(ev2.block_num, '2');
  t.same(ev2.state_changes, []);
  await all.next();

  // One-off deltas of a given block.
  c.send({ action: 'get_block_deltas', block_id: block.header_signature, address_prefixes: [intkeyAddress('ws-b')] });
  const one = JSON.parse(await c.next());
  t.equal(one.block_id, block.header_signature);
  t.same(
    one.state_changes.map((s: any) => s.address),
    [intkeyAddress('ws-b')],
  );

  // Unsubscribed: no more events.
  c.send({ action: 'unsubscribe' });
  const more = intkeyBatch(signer, [['set', 'ws-y', 1]]);
  await postBatches(n.ledgerUrl, batchList(more));
  await waitCommitted(n.ledgerUrl, [more.id]);
  t.equal(JSON.parse(await all.next()).block_num, '3', 'the other socket still gets it');
  await new Promise((r) => setTimeout(r, 100));
  t.equal(c.queued, 0, 'the unsubscribed socket gets nothing');
});

t.test('bad frames get error frames and the socket stays open', async (t) => {
  const c = new Client(wsUrl);
  await c.open();
  t.teardown(() => c.ws.close());
  c.send('not json');
  t.same(JSON.parse(await c.next()), { error: 'Invalid input: "not json"' });
  c.send({ action: 'dance' });
  t.same(JSON.parse(await c.next()), { error: 'Unknown action "dance"' });
  c.send({});
  t.same(JSON.parse(await c.next()), { error: 'Unknown action ""' });
  c.send({ action: 'get_block_deltas' });
  t.same(JSON.parse(await c.next()), { error: 'Must specify a block id' });
  c.send({ action: 'get_block_deltas', block_id: 'f'.repeat(128) });
  t.match(JSON.parse(await c.next()), { error: /Unknown block id/ });
  c.send({ action: 'subscribe', address_prefixes: 'abc' });
  t.match(JSON.parse(await c.next()), { error: /address_prefixes/ });
  c.send({ action: 'subscribe', address_prefixes: [] });
  const ev = JSON.parse(await c.next());
  t.equal(ev.block_id, (await get(`${n.ledgerUrl}/blocks?limit=1`)).json.head, 'still serving');
});
