/**
 * The start scan (src/store/scan.ts, workers/scan-ledger.mjs): every record of the data files
 * is read in a throw-away process, in the background once the node serves, with its progress
 * in /status; one that dies by a signal (LMDB reading a damaged page structure) raises the
 * CORRUPT alarm naming the file, and `--start-scan off` skips it.
 */
import t from 'tap';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { BackgroundScan } from '../src/store/scan.js';
import { loadConfig } from '../src/config.js';
import { startTestNode } from './helpers/node.js';
import { batchList, getJson, intkeyBatch, newSigner, postBatches, waitCommitted } from './helpers/batches.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-scan-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('a file to read', async (t) => {
  const path = join(dir, 'plain.mdb');
  const root = open({ path, maxDbs: 4 });
  const a = root.openDB({ name: 'a' });
  const b = root.openDB({ name: 'b', keyEncoding: 'uint32' });
  await root.transaction(() => {
    for (let i = 0; i < 500; i++) {
      a.put(`k${i}`, { i });
      b.put(i, Buffer.alloc(100, i));
    }
  });
  await root.close();
  // (read whole by the real reader in the next test)
  t.ok(statSync(path).size > 500 * 100);
});

t.test('in the background: progress, a verdict, and a crash that raises the damage', async (t) => {
  const done = (scan: BackgroundScan): Promise<void> =>
    new Promise((resolve) => {
      const poll = setInterval(() => {
        if (scan.progress.state !== 'running') {
          clearInterval(poll);
          resolve();
        }
      }, 10);
    });
  // Real files: every record read, the bytes counted up to the end.
  const path = join(dir, 'plain.mdb');
  const damage: string[] = [];
  const real = new BackgroundScan([path], (c) => damage.push(c));
  t.equal(real.progress.state, 'running');
  t.ok(real.progress.total_bytes > 0, 'the size of the files to read');
  await done(real);
  t.equal(real.progress.state, 'done');
  t.ok(real.progress.read_bytes >= 500 * 100, `the value bytes read (${real.progress.read_bytes})`);
  t.same(damage, []);

  // The child's progress lines, then its end by a signal: the damage is reported, naming the file.
  const crash = join(dir, 'crash-later.mjs');
  writeFileSync(crash, "process.stdout.write('1000\\nnot a number\\n2000\\n', () => process.kill(process.pid, 'SIGSEGV'));\n");
  const crashed = new BackgroundScan([path], (c) => damage.push(c), { script: crash, logEveryMs: 0 });
  await done(crashed);
  t.equal(crashed.progress.state, 'damaged');
  t.equal(crashed.progress.read_bytes, 2000, 'the last progress line');
  t.equal(damage.length, 1);
  t.match(damage[0], /plain\.mdb made the storage library crash \(SIGSEGV\).*page structure is damaged.*backup/);

  // No verdict: past its time limit, a failed read (exit 1), or stopped by the node's close.
  const hang = join(dir, 'hang.mjs');
  writeFileSync(hang, 'setInterval(() => {}, 1000);\n');
  const late = new BackgroundScan([path], (c) => damage.push(c), { script: hang, limitMs: 200 });
  await done(late);
  t.equal(late.progress.state, 'stopped', 'past the time limit');
  const failing = join(dir, 'fail.mjs');
  writeFileSync(failing, 'process.exit(1);\n');
  const failed = new BackgroundScan([path], (c) => damage.push(c), { script: failing });
  await done(failed);
  t.equal(failed.progress.state, 'stopped', 'exit 1');
  const stopped = new BackgroundScan([path], (c) => damage.push(c), { script: hang });
  stopped.stop();
  t.equal(stopped.progress.state, 'stopped', 'stopped');
  await new Promise((r) => setTimeout(r, 100));
  t.equal(stopped.progress.state, 'stopped', 'its end by SIGKILL says nothing more');
  t.equal(damage.length, 1, 'none of them is damage');
  t.equal(new BackgroundScan([], () => undefined).progress.state, 'done', 'nothing to read');
});

t.test('a node serves while it scans; /status shows the scan, and its end', async (t) => {
  const data = mkdtempSync(join(tmpdir(), 'cairn-scan-node-'));
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const first = await startTestNode({}, data);
  t.same((await getJson(`${first.ledgerUrl}/status`)).json.data, { endpoint: '', peers: [] }, 'a new directory: nothing to read, nothing shown');
  await first.stop({ keepData: true });
  const again = await startTestNode({}, data);
  let view: { state: string; read_bytes: number; total_bytes: number } | undefined;
  for (let i = 0; i < 200; i++) {
    view = (await getJson(`${again.ledgerUrl}/status`)).json.data.start_scan;
    if (view?.state !== 'running') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(view?.state, 'done', 'every record read');
  t.ok((view?.total_bytes ?? 0) > 0 && (view?.read_bytes ?? 0) > 0, 'with the bytes');
  await again.stop({ keepData: true });
  // A scan that has read 4096 bytes and goes on for good: the node serves, reads and writes.
  const slow = join(data, 'slow.mjs');
  writeFileSync(slow, "process.stdout.write('4096\\n'); setInterval(() => {}, 1000);\n");
  process.env.CAIRN_TEST_SCAN_SCRIPT = slow;
  const busy = await startTestNode({}, data).finally(() => delete process.env.CAIRN_TEST_SCAN_SCRIPT);
  let seen: { state: string; read_bytes: number } | undefined;
  for (let i = 0; i < 100 && seen?.read_bytes !== 4096; i++) {
    const r = await getJson(`${busy.ledgerUrl}/status`);
    t.equal(r.status, 200);
    seen = r.json.data.start_scan;
    if (seen?.read_bytes !== 4096) await new Promise((r) => setTimeout(r, 50));
  }
  t.match(seen, { state: 'running', read_bytes: 4096 }, 'serving while the scan runs, with its progress');
  const signer = newSigner();
  const b = intkeyBatch(signer, [['set', 'during', 1]]);
  t.equal((await postBatches(busy.ledgerUrl, batchList(b))).status, 202, 'a write accepted meanwhile');
  await waitCommitted(busy.ledgerUrl, [b.id]);
  await busy.stop({ keepData: true });
  const off = await startTestNode({ CAIRN_START_SCAN: 'off' }, data);
  t.teardown(() => off.stop());
  t.equal((await getJson(`${off.ledgerUrl}/status`)).json.data.start_scan, undefined, '--start-scan off: none');
});

t.test('a node whose scan crashes turns read-only with the CORRUPT alarm naming the files; reads are served', async (t) => {
  const data = mkdtempSync(join(tmpdir(), 'cairn-scan-crash-'));
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const first = await startTestNode({}, data);
  await first.stop({ keepData: true });
  const crash = join(data, 'crash.mjs');
  writeFileSync(crash, "process.kill(process.pid, 'SIGSEGV');\n");
  process.env.CAIRN_TEST_SCAN_SCRIPT = crash;
  const n = await startTestNode({}, data).finally(() => delete process.env.CAIRN_TEST_SCAN_SCRIPT);
  t.teardown(() => n.stop());
  let status = await getJson(`${n.ledgerUrl}/status`);
  for (let i = 0; i < 200 && status.status === 200; i++) {
    await new Promise((r) => setTimeout(r, 50));
    status = await getJson(`${n.ledgerUrl}/status`);
  }
  t.equal(status.status, 503, 'read-only');
  t.match(status.json.error.message, /CORRUPT: reading every record of ledger\.mdb and pending\.mdb made the storage library crash \(SIGSEGV\)/);
  const post = await fetch(`${n.ledgerUrl}/batches`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: new Uint8Array(0),
  });
  t.equal(post.status, 503, 'writes refused');
  t.equal((await getJson(`${n.ledgerUrl}/blocks`)).status, 200, 'reads served');
  t.same(
    n.node.ledger.alarms.list().map((a) => a.kind),
    ['CORRUPT'],
  );
});

t.test('--start-scan takes on or off', async (t) => {
  t.equal(loadConfig(['--data-dir', dir]).startScan, true, 'on by default');
  t.equal(loadConfig(['--data-dir', dir, '--start-scan', 'off']).startScan, false);
  t.throws(() => loadConfig(['--data-dir', dir, '--start-scan', 'maybe']), /start scan: expected on or off, got "maybe"/);
});
