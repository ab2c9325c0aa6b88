/**
 * Durability: kill -9 the node while batches are being submitted, restart it, and every
 * batch that got a 202 ends COMMITTED or INVALID; none is UNKNOWN. `cairn check` finds the
 * data directory clean as the kill left it, and again after the restart.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestNode } from './helpers/node.js';
import { nodeArgs, runToExit, startLine } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, postBatches } from './helpers/batches.js';

function startChild(dir: string): Promise<{ url: string; kill(): Promise<void> }> {
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), {
    env: {
      ...process.env,
      CAIRN_DATA_DIR: dir,
      CAIRN_LEDGER_BIND: '127.0.0.1:0',
      CAIRN_NODE_BIND: '127.0.0.1:0',
      CAIRN_DATA_BIND: '127.0.0.1:0',
      CAIRN_NETWORK_BIND: '127.0.0.1:0',
      CAIRN_COMPONENT_BIND: 'off',
      CAIRN_POOL_THREADS: '1',
      CAIRN_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`node did not start: ${log}`)), 30_000);
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const m = startLine(log);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: `http://127.0.0.1:${m[1]}`,
          kill: () =>
            new Promise<void>((done) => {
              child.once('exit', () => done());
              child.kill('SIGKILL');
            }),
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`node exited with ${code}: ${log}`)));
  });
}

t.test('kill -9 during submission loses no acknowledged batch', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-crash-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const child = await startChild(dir);
  const signer = newSigner();
  const acked: string[] = [];
  let stop = false;
  let seq = 0;
  const worker = async (): Promise<void> => {
    while (!stop) {
      const i = seq++;
      // Every fifth batch fails in execution (inc of a missing name): those end INVALID.
      const b = i % 5 === 4 ? intkeyBatch(signer, [['inc', `missing${i}`, 1]]) : intkeyBatch(signer, [['set', `k${i}`, i]]);
      try {
        const r = await postBatches(child.url, batchList(b));
        if (r.status === 202) acked.push(b.id);
      } catch {
        return; // the connection died with the process
      }
    }
  };
  const loops = Array.from({ length: 8 }, () => worker());
  // Kill in the middle of the stream: once enough batches are acknowledged (at most 15 s).
  for (let waited = 0; acked.length < 50 && waited < 15_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 200));
  await child.kill();
  stop = true;
  await Promise.all(loops);
  t.ok(acked.length >= 50, `${acked.length} batches acknowledged before the kill`);
  const check = async (when: string): Promise<void> => {
    const c = await runToExit(['src/cli/cairn.ts', 'check', '--data-dir', dir, '--quiet'], { ...process.env });
    t.equal(c.code, 0, `cairn check ${when}: exit 0`, { log: c.log });
    t.match(c.log, /: clean \(0 problems\)$/m, `cairn check ${when}: clean`);
  };
  await check('as the kill left the directory');

  const n = await startTestNode({}, dir);
  t.teardown(() => n.stop({ keepData: true }));
  const statuses: Array<{ id: string; status: string }> = [];
  for (let i = 0; i < acked.length; i += 100) {
    const chunk = acked.slice(i, i + 100);
    const r = await fetch(`${n.ledgerUrl}/batch_statuses?wait=30`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chunk),
    });
    statuses.push(...((await r.json()) as { data: Array<{ id: string; status: string }> }).data);
  }
  const counts: Record<string, number> = {};
  for (const s of statuses) counts[s.status] = (counts[s.status] ?? 0) + 1;
  t.equal(statuses.length, acked.length);
  t.equal(counts.UNKNOWN ?? 0, 0, 'no acknowledged batch is unknown');
  t.equal(counts.PENDING ?? 0, 0, 'all were processed after restart');
  t.ok((counts.COMMITTED ?? 0) > 0 && (counts.INVALID ?? 0) > 0, JSON.stringify(counts));
  await n.node.close();
  await check('after the restart');
});
