/**
 * A real full disk: the data directory on a small tmpfs. Every submission is answered
 * 202, 429 or 503 in the error shape (never a bare 500, never a dropped request); once a
 * write fails the node raises the NOSPACE alarm (read-only: reads stay 200, /status says
 * "disk full"), and once the tmpfs is grown the same process clears it by itself and
 * commits every acknowledged batch. Needs root (mount); skipped otherwise.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, postBatches, getJson } from './helpers/batches.js';

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

t.test('ENOSPC on the data directory: read-only, then recovered by the same process', { skip: refused }, async (t) => {
  const dir = join(mnt, 'data');
  const child = await startChild(dir, { CAIRN_QUEUE_INITIAL_AVERAGE: '1000' });
  t.teardown(() => child.kill());
  const signer = newSigner();
  const acked: string[] = [];
  const seen: Record<number, number> = {};
  const others: string[] = [];
  let dropped = 0;
  let full = false;
  for (let round = 0; round < 400 && !full; round++) {
    // Four requests at once: answers must come for every one of them.
    const bodies = Array.from({ length: 4 }, (_, k) =>
      Array.from({ length: 25 }, (_, i) => intkeyBatch(signer, [['set', `r${round}k${k}i${i}`, i]])),
    );
    const answers = await Promise.all(bodies.map((batches) => postBatches(child.ledgerUrl, batchList(...batches)).catch(() => null)));
    for (const [k, r] of answers.entries()) {
      if (r === null) {
        dropped++;
        continue;
      }
      seen[r.status] = (seen[r.status] ?? 0) + 1;
      if (r.status === 202) acked.push(...(bodies[k] ?? []).map((b) => b.id));
      else if (r.status === 503) {
        full = true;
        if (r.json?.error?.code !== 18 || typeof r.json.error.message !== 'string') others.push(JSON.stringify(r.json));
      } else if (r.status !== 429) others.push(`${r.status} ${JSON.stringify(r.json)}`);
    }
  }
  t.comment(`answers: ${JSON.stringify(seen)}`);
  t.equal(dropped, 0, 'every request got an answer');
  t.same(others, [], 'only 202, 429 and 503 code 18 with a reason');
  t.ok(full, 'the disk filled up: 503');
  t.ok(acked.length > 0, `${acked.length} batches acknowledged`);
  const status = await getJson(`${child.ledgerUrl}/status`);
  t.equal(status.status, 503);
  t.match(status.json.error.message, /NOSPACE: disk full/);
  t.equal((await getJson(`${child.ledgerUrl}/blocks?limit=5`)).status, 200, 'reads are served');
  t.equal((await getJson(`${child.ledgerUrl}/state?limit=5`)).status, 200);
  t.equal(child.child.exitCode, null, 'the node is still running');

  // Room again: the same process clears the alarm and commits every acknowledged batch.
  execFileSync('mount', ['-o', 'remount,size=256m', mnt], { stdio: 'pipe' });
  let cleared = false;
  for (let i = 0; i < 600 && !cleared; i++) {
    cleared = (await getJson(`${child.ledgerUrl}/status`)).status === 200;
    if (!cleared) await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(cleared, 'the alarm cleared by itself');
  const statuses: string[] = [];
  for (let i = 0; i < acked.length; i += 500) {
    const r = await fetch(`${child.ledgerUrl}/batch_statuses?wait=60`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(acked.slice(i, i + 500)),
    });
    statuses.push(...((await r.json()) as { data: Array<{ status: string }> }).data.map((s) => s.status));
  }
  const counts: Record<string, number> = {};
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
  if (!t.equal(statuses.filter((s) => s === 'COMMITTED').length, acked.length, `every acknowledged batch committed: ${JSON.stringify(counts)}`))
    t.comment(
      child
        .log()
        .split('\n')
        .filter((l) => /error|warn|alarm|committer|recovery/i.test(l))
        .slice(-25)
        .join('\n'),
    );
  t.equal(child.child.exitCode, null, 'the same process');
  const lines = child.log().split('\n');
  t.equal(lines.filter((l) => l.includes('alarm raised: NOSPACE')).length, 1, 'one line when raised');
  t.ok(
    lines.some((l) => l.includes('alarm cleared: NOSPACE')),
    'a line when cleared',
  );
});
