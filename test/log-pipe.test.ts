/**
 * A node whose log reader goes away (stderr a pipe whose reader exited: `cairn start | head`,
 * a log shipper restarting) goes on: it serves and commits, does not spin on the failed
 * writes, and SIGTERM still stops it cleanly. Before, each failed write was an uncaught
 * exception whose report was another failed write: the first request after it dropped
 * its connection, the process spun at full speed and ignored SIGTERM.
 */
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted, getJson } from './helpers/batches.js';

/** CPU seconds (user + system, all threads) the process has used. */
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(f[11]) + Number(f[12])) / 100;
}

t.test('the node outlives its log pipe', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-logpipe-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Debug level: every request writes a line, so every request meets the broken pipe.
  const n = await startChild(dir, { CAIRN_LOG_LEVEL: 'debug' });
  t.teardown(() => n.kill9());
  n.child.stderr?.destroy(); // the reader goes away: the node's next write fails with EPIPE

  for (let i = 0; i < 5; i++) t.equal((await getJson(`${n.ledgerUrl}/status`)).status, 200, `request ${i} answered`);
  const b = intkeyBatch(newSigner(), [['set', 'logpipe', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED', 'and it still commits');

  // Idle, it uses next to no CPU (it spun at a full core before).
  const c0 = cpuSeconds(n.pid);
  await new Promise((r) => setTimeout(r, 2000));
  const used = cpuSeconds(n.pid) - c0;
  t.ok(used < 1, `CPU used over 2 s idle: ${used.toFixed(2)} s`);

  t.equal(await n.stop(), 0, 'SIGTERM stops it, exit 0');
});
