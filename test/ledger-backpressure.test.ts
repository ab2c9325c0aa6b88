/**
 * Back-pressure: limit = multiplier × rolling average of batches per block. With a tiny
 * limit and blocks held back, the next submission gets 429 code 31 before any signature
 * work (even a bad batch), the node's own batches are exempt, and every accepted batch
 * commits once blocks flow again.
 */
import t from 'tap';
import { join } from 'node:path';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, getJson, waitCommitted } from './helpers/batches.js';
import { loadOrCreateKey } from '../src/store/keys.js';

t.test('429 under a tiny queue limit; node-key batches exempt', async (t) => {
  const env = { CAIRN_QUEUE_MULTIPLIER: '1', CAIRN_QUEUE_INITIAL_AVERAGE: '2', CAIRN_MIN_BLOCK_INTERVAL_MS: '600000' };
  let n = await startTestNode(env);
  t.teardown(() => n.stop());
  const signer = newSigner();
  const a = intkeyBatch(signer, [['set', 'a', 1]]);
  const b = intkeyBatch(signer, [['set', 'b', 1]]);
  const c = intkeyBatch(signer, [['set', 'c', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(a))).status, 202);
  t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
  const full = await postBatches(n.ledgerUrl, batchList(c));
  t.equal(full.status, 429);
  t.equal(full.json.error.code, 31);
  t.equal(full.json.error.title, 'Unable to Accept Batches');
  // Checked before signature work: garbage also gets 429 while the queue is full.
  const garbage = await postBatches(n.ledgerUrl, Buffer.from('garbage'));
  t.equal(garbage.status, 429);

  const statuses = await getJson(`${n.ledgerUrl}/batch_statuses?id=${a.id},${b.id},${c.id}`);
  t.same(
    statuses.json.data.map((s: { status: string }) => s.status),
    ['PENDING', 'PENDING', 'UNKNOWN'],
  );

  const nodeSigner = loadOrCreateKey(join(n.dataDir, 'keys', 'validator.priv'));
  t.equal(nodeSigner.publicKey, n.node.nodeSigner.publicKey);
  const own = intkeyBatch(nodeSigner, [['set', 'own', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(own))).status, 202, 'node-signed batch is exempt');

  // Restart with blocks flowing: every accepted batch commits, the refused one is unknown.
  const dir = n.dataDir;
  await n.stop({ keepData: true });
  n = await startTestNode({}, dir);
  const after = await waitCommitted(n.ledgerUrl, [a.id, b.id, own.id, c.id]);
  t.same(
    after.map((s: { status: string }) => s.status),
    ['COMMITTED', 'COMMITTED', 'COMMITTED', 'UNKNOWN'],
  );
});

t.test('a full queue exempts only unseen node-signed batches, each one', async (t) => {
  const env = { CAIRN_QUEUE_MULTIPLIER: '1', CAIRN_QUEUE_INITIAL_AVERAGE: '1' };
  let n = await startTestNode();
  const nodeSigner = loadOrCreateKey(join(n.dataDir, 'keys', 'validator.priv'));
  // A node-signed batch, committed: public on GET /batches, as every data API write is.
  const published = intkeyBatch(nodeSigner, [['set', 'pub', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(published))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [published.id]))[0].status, 'COMMITTED');
  const dir = n.dataDir;
  await n.stop({ keepData: true });
  // Now a limit of 1 and no blocks: one client batch fills the queue.
  n = await startTestNode({ ...env, CAIRN_MIN_BLOCK_INTERVAL_MS: '600000' }, dir);
  t.teardown(() => n.stop());
  const signer = newSigner();
  t.equal((await postBatches(n.ledgerUrl, batchList(intkeyBatch(signer, [['set', 'fill', 1]])))).status, 202);
  const mine = intkeyBatch(signer, [['set', 'mine', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(mine))).status, 429, 'plain list refused');
  const smuggled = await postBatches(n.ledgerUrl, batchList(published, mine));
  t.equal(smuggled.status, 429, 'a copy of a committed node batch does not carry a client batch in');
  t.equal(smuggled.json.error.code, 31);
  const fresh = intkeyBatch(nodeSigner, [['set', 'fresh', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(fresh, mine))).status, 429, 'nor does a fresh node batch');
  t.equal((await postBatches(n.ledgerUrl, batchList(published))).status, 429, 'a seen node batch is not exempt');
  t.equal((await postBatches(n.ledgerUrl, batchList(fresh))).status, 202, 'an unseen node batch is');
  const st = await getJson(`${n.ledgerUrl}/batch_statuses?id=${mine.id},${fresh.id}`);
  t.same(
    st.json.data.map((s: { status: string }) => s.status),
    ['UNKNOWN', 'PENDING'],
  );
});
