/**
 * kill -9 cases of the pending pool: a duplicate submission is answered only once the
 * batch is durable, and sequence numbers never go back below a stored verdict (so a
 * resubmitted, now valid batch is not mistaken for its old INVALID self).
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestNode } from './helpers/node.js';
import { startChild } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted } from './helpers/batches.js';

t.test('a duplicate gets its 202 only once the first copy is durable', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-dup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Every pending-pool write takes 3 s: the second copy arrives while the first is written.
  const child = await startChild(dir, { CAIRN_TEST_FAULTS: 'pending.write:delay=3000' });
  t.teardown(() => child.kill());
  const signer = newSigner();
  const batches = Array.from({ length: 20 }, (_, i) => intkeyBatch(signer, [['set', `d${i}`, i]]));
  const acked = new Set<string>();
  let firstAck!: () => void;
  const anyAck = new Promise<void>((r) => (firstAck = r));
  const post = async (b: (typeof batches)[number]): Promise<void> => {
    try {
      const r = await postBatches(child.ledgerUrl, batchList(b));
      if (r.status === 202) {
        acked.add(b.id);
        firstAck();
      }
    } catch {
      // killed
    }
  };
  const all = batches.flatMap((b) => [post(b), new Promise((r) => setTimeout(r, 300)).then(() => post(b))]);
  await anyAck;
  await new Promise((r) => setTimeout(r, 100));
  await child.kill();
  await Promise.all(all);
  t.ok(acked.size > 0, `${acked.size} batches acknowledged before the kill`);
  const n = await startTestNode({}, dir);
  t.teardown(() => n.stop({ keepData: true }));
  const st = await waitCommitted(n.ledgerUrl, [...acked], 30);
  t.same(
    st.filter((s: { status: string }) => s.status !== 'COMMITTED'),
    [],
    'every acknowledged batch committed',
  );
});

t.test('a resubmitted batch is not settled by its old INVALID verdict after a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-seq-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const signer = newSigner();
  const y = intkeyBatch(signer, [['inc', 'g', 1]]);
  const x = intkeyBatch(signer, [['set', 'g', 1]]);
  let n = await startTestNode({}, dir);
  t.equal((await postBatches(n.ledgerUrl, batchList(y))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [y.id]))[0].status, 'INVALID');
  t.equal((await postBatches(n.ledgerUrl, batchList(x))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [x.id]))[0].status, 'COMMITTED', 'y is valid now');
  await n.stop({ keepData: true }); // clean: the pending pool is empty

  // No blocks in this run: y stays PENDING until the kill.
  const child = await startChild(dir, { CAIRN_MIN_BLOCK_INTERVAL_MS: '600000' });
  t.teardown(() => child.kill());
  t.equal((await postBatches(child.ledgerUrl, batchList(y))).status, 202);
  t.equal((await waitCommitted(child.ledgerUrl, [y.id], 0))[0].status, 'PENDING');
  await child.kill();

  n = await startTestNode({}, dir);
  t.teardown(() => n.stop({ keepData: true }));
  const [s] = await waitCommitted(n.ledgerUrl, [y.id], 30);
  t.equal(s.status, 'COMMITTED', 'y runs again and commits');
});
