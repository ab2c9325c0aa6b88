/**
 * The `wait` query of /batch_statuses, one parser for the data API and the ledger gateway: a negative
 * integer (`-1`, `-0`) does not wait (it used to wait the maximum), integers as Python
 * reads them, `false`, and the long wait for anything else.
 */
import t from 'tap';
import { parseWaitQuery, LONG_WAIT_SECONDS } from '../src/http/wait.js';
import { startTestNode, type TestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches } from './helpers/batches.js';

t.test('parseWaitQuery', async (t) => {
  const cases: Array<[string | null, number]> = [
    [null, 0],
    ['false', 0],
    ['FALSE', 0],
    ['0', 0],
    ['-0', 0],
    ['-1', 0],
    [' -300 ', 0],
    ['7', 7],
    ['+7', 7],
    [' 1_0 ', 10],
    ['100000000000000000000', LONG_WAIT_SECONDS],
    ['', LONG_WAIT_SECONDS],
    ['true', LONG_WAIT_SECONDS],
    ['1.5', LONG_WAIT_SECONDS],
    ['1__0', LONG_WAIT_SECONDS],
    ['--1', LONG_WAIT_SECONDS],
  ];
  for (const [w, want] of cases) t.equal(parseWaitQuery(w), want, `wait=${String(w)}`);
});

let n: TestNode;
let pendingId: string;

t.before(async () => {
  // No block for a long while: a submitted batch stays PENDING, so any wait runs its full length.
  n = await startTestNode({ CAIRN_MIN_BLOCK_INTERVAL_MS: '600000' });
  const b = intkeyBatch(newSigner(), [['set', 'waiting', 1]]);
  const r = await postBatches(n.ledgerUrl, batchList(b));
  if (r.status !== 202) throw new Error(`submit: ${r.status}`);
  pendingId = b.id;
});
t.teardown(() => n?.stop());

for (const w of ['-1', '-0', '0', 'false']) {
  for (const iface of ['B', 'C'] as const) {
    t.test(`${iface}: wait=${w} on a pending batch answers at once`, async (t) => {
      const base = iface === 'B' ? n.dataUrl : n.ledgerUrl;
      const r = await fetch(`${base}/batch_statuses?id=${pendingId}&wait=${w}`, { signal: AbortSignal.timeout(30000) });
      t.equal(r.status, 200);
      const j = (await r.json()) as { data: Array<{ status: string }> };
      t.equal(j.data[0]!.status, 'PENDING');
      if (iface === 'C') {
        const p = await fetch(`${base}/batch_statuses?wait=${w}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify([pendingId]),
          signal: AbortSignal.timeout(30000),
        });
        t.equal(p.status, 200);
      }
    });
  }
}

t.test('a positive wait still waits (bounded by its value)', async (t) => {
  const started = Date.now();
  const r = await fetch(`${n.dataUrl}/batch_statuses?id=${pendingId}&wait=1`, { signal: AbortSignal.timeout(30000) });
  t.equal(r.status, 200);
  t.ok(Date.now() - started >= 900, 'waited about a second');
});
