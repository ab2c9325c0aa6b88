/**
 * Batch-status waits on the component endpoint are bounded, per client and in all
 * (--component-waits-per-client, --component-waits): past a bound a ClientBatchStatusRequest
 * with `wait` is answered at once with INTERNAL_ERROR (and the node logs why), the waits
 * within the bounds are held and answered when their batch settles, a request without
 * `wait` is still answered, and the node keeps serving. And ended waits resume at a bounded
 * pace (src/http/wait.ts), so that a block that ends thousands of them cannot hold the thread.
 */
import t from 'tap';
import { startTestNode } from './helpers/node.js';
import { newSigner, batchList, postBatches, buildBatch, buildTransaction, intkeySpec, intkeyBatch, waitCommitted } from './helpers/batches.js';
import { ZmqClient, pb, MT } from './helpers/zmq-client.js';
import { captureStderr } from './helpers/node-api.js';
import { paced, WAKE_SLICE } from '../src/http/wait.js';

const OK = 1;
const INTERNAL_ERROR = 2;
const PENDING = pb.ClientBatchStatus.Status.PENDING;
const COMMITTED = pb.ClientBatchStatus.Status.COMMITTED;
const MISSING = 'ab'.repeat(64);

t.test('status waits past the per-client and the total bound are refused at once with INTERNAL_ERROR', async (t) => {
  const log = captureStderr();
  const n = await startTestNode({
    CAIRN_COMPONENT_BIND: '127.0.0.1:0',
    CAIRN_COMPONENT_WAITS_PER_CLIENT: '3',
    CAIRN_COMPONENT_WAITS: '5',
    CAIRN_DEPENDENCY_WAIT: '120',
  });
  const a = new ZmqClient(n.node.ledger.componentEndpoint ?? '');
  const b = new ZmqClient(n.node.ledger.componentEndpoint ?? '');
  t.teardown(async () => {
    log.restore();
    a.close();
    b.close();
    await n.stop();
  });
  const signer = newSigner();
  // A batch that stays PENDING: it depends on a transaction that does not exist.
  const stuck = buildBatch(signer, [buildTransaction(signer, intkeySpec('set', 'held', 1, { dependencies: [MISSING] }))]);
  t.equal((await postBatches(n.ledgerUrl, batchList(stuck))).status, 202);
  const done = intkeyBatch(signer, [['set', 'done', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(done))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [done.id]))[0].status, 'COMMITTED');

  // Held waits end at their 15-s timeout, after the checks below.
  const ask = (c: ZmqClient, ids: string[], wait: boolean, timeout = 15): Promise<any> =>
    c.request(MT.CLIENT_BATCH_STATUS_REQUEST, pb.ClientBatchStatusRequest.encode({ batchIds: ids, wait, timeout }).finish(), 60_000).then((r) => {
      t.equal(r.type, MT.CLIENT_BATCH_STATUS_RESPONSE, 'a batch status response');
      return pb.ClientBatchStatusResponse.decode(r.content);
    });
  let answered = 0;
  const count = <T>(p: Promise<T>): Promise<T> => p.finally(() => answered++);

  // Client a: three waits are held (its bound); the fourth is refused at once.
  const heldA = [1, 2, 3].map(() => count(ask(a, [stuck.id], true)));
  const overA = await ask(a, [stuck.id], true);
  t.equal(overA.status, INTERNAL_ERROR, "past the client's bound: INTERNAL_ERROR");
  t.same(overA.batchStatuses, [], 'and no statuses');
  // Client b: two more reach the total bound (5); its third is refused though b holds only two.
  const heldB = [1, 2].map(() => count(ask(b, [stuck.id], true)));
  const overB = await ask(b, [stuck.id], true);
  t.equal(overB.status, INTERNAL_ERROR, 'past the total bound: INTERNAL_ERROR');
  t.equal(answered, 0, 'the waits within the bounds are still held');
  t.match(log.text(), /batch-status wait\(s\) refused with INTERNAL_ERROR: client [0-9a-f]+ holds 3 \(--component-waits-per-client\)/);

  // Requests without `wait` are answered as ever, and so is the REST gateway.
  const now = await ask(b, [stuck.id, done.id], false);
  t.equal(now.status, OK);
  t.same(
    now.batchStatuses.map((s: { status: number }) => s.status),
    [PENDING, COMMITTED],
  );
  t.equal((await fetch(`${n.ledgerUrl}/status`)).status, 200);

  // The held waits end at their timeout, answered with the status then.
  const held = await Promise.all([...heldA, ...heldB]);
  t.same(
    held.map((r) => [r.status, r.batchStatuses[0]?.status]),
    Array.from({ length: 5 }, () => [OK, PENDING]),
    'the held waits answer PENDING at their timeout',
  );
  // Their slots are free again.
  const again = await ask(b, [stuck.id], true, 1);
  t.equal(again.status, OK, 'a wait after them is held again');
});

t.test('a wait that ends gives its slot back; a wait for settled batches holds none', async (t) => {
  const n = await startTestNode({
    CAIRN_COMPONENT_BIND: '127.0.0.1:0',
    CAIRN_COMPONENT_WAITS_PER_CLIENT: '1',
    CAIRN_COMPONENT_WAITS: '1',
    CAIRN_DEPENDENCY_WAIT: '120',
  });
  const c = new ZmqClient(n.node.ledger.componentEndpoint ?? '');
  t.teardown(async () => {
    c.close();
    await n.stop();
  });
  const signer = newSigner();
  const stuck = buildBatch(signer, [buildTransaction(signer, intkeySpec('set', 'held', 1, { dependencies: [MISSING] }))]);
  t.equal((await postBatches(n.ledgerUrl, batchList(stuck))).status, 202);
  const ask = async (ids: string[], timeout: number): Promise<any> =>
    pb.ClientBatchStatusResponse.decode(
      (await c.request(MT.CLIENT_BATCH_STATUS_REQUEST, pb.ClientBatchStatusRequest.encode({ batchIds: ids, wait: true, timeout }).finish(), 30_000))
        .content,
    );
  // Waits one after another, each ending (a 1-s timeout) before the next: never refused.
  for (let i = 0; i < 3; i++) {
    const r = await ask([stuck.id], 1);
    t.equal(r.status, OK, `wait ${i + 1} held and answered at its timeout`);
    t.equal(r.batchStatuses[0].status, PENDING);
  }
  // A wait for a batch that commits is answered once it commits, and frees its slot.
  const b = intkeyBatch(signer, [['set', 'soon', 1]]);
  const waiting = ask([b.id], 30);
  t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
  // (The batch may be UNKNOWN when the wait arrives: then nothing is held and it answers at once.)
  const r = await waiting;
  t.equal(r.status, OK);
  const after = await ask([b.id], 30);
  t.equal(after.status, OK, 'the slot is free again');
  t.equal(after.batchStatuses[0].status, COMMITTED);
});

t.test('ended waits resume at most WAKE_SLICE per turn of the event loop, in order', async (t) => {
  const order: number[] = [];
  const all = Array.from({ length: WAKE_SLICE * 2 + 5 }, (_, i) => paced(Promise.resolve(i)).then((v) => order.push(v)));
  // Let the ended waits enter the queue (microtasks), then count what resumed after each turn.
  for (let i = 0; i < 5; i++) await Promise.resolve();
  t.equal(order.length, 0, 'none resumes in the turn they ended in');
  const seen: number[] = [];
  for (let turn = 0; turn < 4; turn++) {
    await new Promise((r) => setImmediate(r));
    seen.push(order.length);
  }
  await Promise.all(all);
  const [first = 0, second = 0] = seen;
  t.ok(first <= WAKE_SLICE, `at most ${WAKE_SLICE} after the first turn (${first})`);
  t.ok(second <= WAKE_SLICE * 2, `at most ${WAKE_SLICE * 2} after the second (${second})`);
  t.same(
    order,
    Array.from({ length: WAKE_SLICE * 2 + 5 }, (_, i) => i),
    'in the order they ended',
  );
  await t.rejects(paced(Promise.reject(new Error('gone'))), /gone/, 'a wait that fails rejects as before');
});

t.test("one client's flood of requests does not hold up another client's request: peers take turns", async (t) => {
  const n = await startTestNode({ CAIRN_COMPONENT_BIND: '127.0.0.1:0' });
  const flood = new ZmqClient(n.node.ledger.componentEndpoint ?? '');
  const other = new ZmqClient(n.node.ledger.componentEndpoint ?? '');
  t.teardown(async () => {
    flood.close();
    other.close();
    await n.stop();
  });
  const content = pb.ClientBatchStatusRequest.encode({ batchIds: [MISSING], wait: false }).finish();
  const ask = (c: ZmqClient): Promise<unknown> => c.request(MT.CLIENT_BATCH_STATUS_REQUEST, content, 120_000);
  // Both clients are known to the endpoint before the flood.
  await Promise.all([ask(flood), ask(other)]);
  // The flood: N requests whose answers nobody waits for (the client counts them as unmatched).
  const N = 10_000;
  const frame = (i: number): Buffer =>
    Buffer.from(pb.Message.encode({ messageType: MT.CLIENT_BATCH_STATUS_REQUEST, correlationId: `flood-${i}`, content }).finish());
  for (let i = 0; i < N - 1; i++) void flood.sendRaw(frame(i));
  await flood.sendRaw(frame(N - 1));
  // Once a tenth is answered the rest is relayed and queued on the node's HTTP thread.
  const until = async (cond: () => boolean): Promise<void> => {
    while (!cond()) await new Promise((r) => setTimeout(r, 5));
  };
  await until(() => flood.unmatched >= N / 10);
  await ask(other);
  const seen = flood.unmatched;
  // Taking turns, the other client's request is handled within a pass of the intake (64
  // messages), and its answer goes out behind the flood's answers already made (the
  // endpoint's send queue: about 2,000 here); first in, first out, it came behind the whole
  // queued flood (all 10,000).
  t.ok(seen < N / 2, `the other client was answered after ${seen} of the flood's ${N} answers (in turn, not behind the flood)`);
  await until(() => flood.unmatched === N);
  t.equal(flood.unmatched, N, 'and the flood is answered whole');
});
