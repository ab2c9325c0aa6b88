/**
 * Commit waits are checked from the committer's message handler: a condition that throws
 * ends that wait (and is logged) instead of ending the process.
 */
import t from 'tap';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted } from './helpers/batches.js';
import { CommitWaits } from '../src/ledger-api/waits.js';
import { captureStderr } from './helpers/node-api.js';

t.test('a wait whose condition throws ends at the next block; the node keeps committing', async (t) => {
  const n = await startTestNode();
  const log = captureStderr();
  t.teardown(async () => {
    log.restore();
    await n.stop();
  });
  const waits = new CommitWaits(n.node.ledger);
  let calls = 0;
  const waited = waits.until(() => {
    if (++calls > 1) throw new Error('cannot check');
    return false;
  }, 60_000);
  const b = intkeyBatch(newSigner(), [['set', 'w1', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
  await waited;
  t.ok(calls >= 2, 'the condition was checked at the commit');
  t.match(log.text(), /a commit wait could not check its condition/);
  const b2 = intkeyBatch(newSigner(), [['set', 'w2', 2]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(b2))).status, 202);
  const [st] = await waitCommitted(n.ledgerUrl, [b2.id]);
  t.equal(st.status, 'COMMITTED');
  waits.close();
});
