/**
 * Batches waiting on dependencies: they do not hold back the batches behind them, they
 * expire (INVALID, naming the missing dependency) after the dependency wait, also after
 * a restart, and the queue limit counts the batches of a list, not requests.
 */
import t from 'tap';
import { startTestNode } from './helpers/node.js';
import {
  newSigner,
  intkeyBatch,
  intkeySpec,
  buildBatch,
  buildTransaction,
  batchList,
  postBatches,
  getJson,
  waitCommitted,
} from './helpers/batches.js';

const MISSING = 'ab'.repeat(64);

t.test('a list of 1,000 batches counts as 1,000 against the queue limit', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  const signer = newSigner();
  const many = Array.from({ length: 1000 }, (_, i) => intkeyBatch(signer, [['set', `m${i}`, i]]));
  const r = await postBatches(n.ledgerUrl, batchList(...many));
  t.equal(r.status, 429, 'refused under the default limit of 300');
  t.equal(r.json.error.code, 31);
  t.equal(n.node.ledger.pendingCount, 0, 'nothing stored');
  const ok = await postBatches(n.ledgerUrl, batchList(...many.slice(0, 300)));
  t.equal(ok.status, 202, '300 fit');
});

t.test('waiting batches neither block others nor live for ever', async (t) => {
  const env = { CAIRN_MAX_BATCHES_PER_BLOCK: '20', CAIRN_DEPENDENCY_WAIT: '3' };
  let n = await startTestNode(env);
  const signer = newSigner();
  const waiting = Array.from({ length: 200 }, (_, i) =>
    buildBatch(signer, [buildTransaction(signer, intkeySpec('set', `w${i}`, i, { dependencies: [MISSING] }))]),
  );
  t.equal((await postBatches(n.ledgerUrl, batchList(...waiting))).status, 202);
  // Far more waiting batches than fit in a block: a later batch still commits at once.
  const later = intkeyBatch(signer, [['set', 'later', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(later))).status, 202);
  const [s] = await waitCommitted(n.ledgerUrl, [later.id], 20);
  t.equal(s.status, 'COMMITTED', 'the committer looks past waiting batches');
  t.equal((await getJson(`${n.ledgerUrl}/batch_statuses?id=${waiting[0]!.id}`)).json.data[0].status, 'PENDING');

  // Restart before they expire: the wait starts again from the restart, then they expire.
  const dir = n.dataDir;
  await n.stop({ keepData: true });
  n = await startTestNode(env, dir);
  t.teardown(() => n.stop());
  t.equal(n.node.ledger.pendingCount, 200, 'still pending after the restart');
  const r = await fetch(`${n.ledgerUrl}/batch_statuses?wait=30`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(waiting.map((b) => b.id)),
  });
  const data = ((await r.json()) as { data: Array<{ status: string; invalid_transactions: Array<{ id: string; message: string }> }> }).data;
  t.same(new Set(data.map((d) => d.status)), new Set(['INVALID']), 'every waiting batch expired');
  t.equal(data[0]!.invalid_transactions[0]!.id, waiting[0]!.txnIds[0]!);
  t.match(data[0]!.invalid_transactions[0]!.message, new RegExp(`Dependency ${MISSING} .*not committed within 3 s`));
  t.equal(n.node.ledger.pendingCount, 0, 'the pool no longer counts them');

  // A dependency that does arrive in time is honoured.
  const dep = intkeyBatch(signer, [['set', 'dep', 1]]);
  const child = buildBatch(signer, [buildTransaction(signer, intkeySpec('inc', 'dep', 1, { dependencies: [dep.txnIds[0]!] }))]);
  t.equal((await postBatches(n.ledgerUrl, batchList(child))).status, 202);
  t.equal((await postBatches(n.ledgerUrl, batchList(dep))).status, 202);
  const done = await waitCommitted(n.ledgerUrl, [child.id, dep.id], 20);
  t.same(
    done.map((d: { status: string }) => d.status),
    ['COMMITTED', 'COMMITTED'],
  );
});
