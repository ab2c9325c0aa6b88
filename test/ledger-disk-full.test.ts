/**
 * A real full disk: the data directory on a small tmpfs. Every submission is answered
 * 202, 429 or 503 in the error shape (never a bare 500); once a write of the node's
 * ledger fails the node ends non-zero on its own, with one fault line in its log (no
 * silent death, no zombie that keeps acknowledging); once the disk has room again every
 * acknowledged batch commits after a restart. Needs root (mount); skipped otherwise.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild } from './helpers/child.js';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches } from './helpers/batches.js';

const mnt = mkdtempSync(join(tmpdir(), 'cairn-full-'));
let refused: string | false = false;
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1200k', 'tmpfs', mnt], { stdio: 'pipe' });
} catch (err) {
  refused = `cannot mount a tmpfs here (needs root): ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;
}
t.teardown(() => {
  if (!refused) {
    try {
      execFileSync('umount', [mnt], { stdio: 'pipe' });
    } catch {
      // already unmounted
    }
  }
  rmSync(mnt, { recursive: true, force: true });
});

t.test('ENOSPC on the data directory', { skip: refused }, async (t) => {
  const dir = join(mnt, 'data');
  const child = await startChild(dir, { CAIRN_QUEUE_INITIAL_AVERAGE: '1000' });
  t.teardown(() => child.kill());
  let exitCode: number | null | undefined;
  void child.exited.then((c) => {
    exitCode = c;
  });
  const signer = newSigner();
  const acked: string[] = [];
  const seen: Record<number, number> = {};
  const others: string[] = [];
  for (let round = 0; round < 400 && exitCode === undefined; round++) {
    const batches = Array.from({ length: 50 }, (_, i) => intkeyBatch(signer, [['set', `r${round}i${i}`, i]]));
    let r: Awaited<ReturnType<typeof postBatches>>;
    try {
      r = await postBatches(child.ledgerUrl, batchList(...batches));
    } catch {
      break; // the process ended while this request was open: not acknowledged
    }
    seen[r.status] = (seen[r.status] ?? 0) + 1;
    if (r.status === 202) acked.push(...batches.map((b) => b.id));
    else if (r.status === 503) {
      if (r.json?.error?.code !== 18 || typeof r.json.error.message !== 'string') others.push(JSON.stringify(r.json));
    } else if (r.status !== 429) others.push(`${r.status} ${JSON.stringify(r.json)}`);
  }
  t.comment(`answers: ${JSON.stringify(seen)}`);
  t.same(others, [], 'only 202, 429 and 503 code 18 with a reason');
  t.ok(acked.length > 0, `${acked.length} batches acknowledged`);
  const code = await Promise.race([child.exited, new Promise<string>((r) => setTimeout(() => r('still running'), 60_000))]);
  t.not(code, 'still running', 'the node ends on its own once its disk is full');
  t.ok(typeof code === 'number' && code !== 0, `exit code ${String(code)} is non-zero`);
  const faults = child
    .log()
    .split('\n')
    .filter((l) => l.includes('ledger fault, no more batches are accepted'));
  t.equal(faults.length, 1, `one fault line: ${faults[0] ?? ''}`);
  t.match(faults[0], /Input\/output error|ENOSPC|No space left/, 'the fault names the disk error');

  // Room again: the acknowledged batches are all in the pending pool and commit.
  execFileSync('mount', ['-o', 'remount,size=256m', mnt], { stdio: 'pipe' });
  const n = await startTestNode({}, dir);
  t.teardown(() => n.stop({ keepData: true }));
  const statuses: string[] = [];
  for (let i = 0; i < acked.length; i += 500) {
    const r = await fetch(`${n.ledgerUrl}/batch_statuses?wait=60`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(acked.slice(i, i + 500)),
    });
    statuses.push(...((await r.json()) as { data: Array<{ status: string }> }).data.map((s) => s.status));
  }
  t.equal(statuses.filter((s) => s === 'COMMITTED').length, acked.length, 'every acknowledged batch committed');
});
