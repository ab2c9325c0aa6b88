/**
 * The start-up scan (src/store/scan.ts, workers/scan-ledger.mjs): every record of the data
 * files is read in a throw-away process; one that dies by a signal (LMDB reading a damaged
 * page structure) makes the node refuse to start with a message naming the file, and
 * `--start-scan off` skips it. The bit-flip test (faults-bitflips) drives it on real damage.
 */
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { scanInChild } from '../src/store/scan.js';
import { preflight } from '../src/store/preflight.js';
import { openEnv } from '../src/store/db.js';
import { StartupError } from '../src/store/lock.js';
import { loadConfig } from '../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-scan-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('an intact file is read whole without a verdict', async (t) => {
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
  t.equal(await scanInChild([path]), null, 'no signal');
  t.equal(await scanInChild([join(dir, 'missing', 'nothing.mdb')]), null, 'an error it meets is the normal start path to report');
});

t.test('a scan process killed by a signal is reported with the signal', async (t) => {
  const crash = join(dir, 'crash.mjs');
  writeFileSync(crash, "process.kill(process.pid, 'SIGSEGV');\n");
  t.equal(await scanInChild(['x'], 60_000, crash), 'SIGSEGV');
  const hang = join(dir, 'hang.mjs');
  writeFileSync(hang, 'setInterval(() => {}, 1000);\n');
  t.equal(await scanInChild(['x'], 300, hang), null, 'a scan that runs past its time limit gives no verdict');
});

t.test('the start refuses a data directory whose scan crashed, naming the file', async (t) => {
  const data = mkdtempSync(join(tmpdir(), 'cairn-scan-node-'));
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const first = await preflight(data, () => openEnv(data));
  await first.close();
  const seen: string[][] = [];
  const err = await preflight(data, () => openEnv(data), {
    scanner: async (paths) => {
      seen.push(paths);
      return 'SIGSEGV';
    },
  }).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof StartupError, 'a StartupError');
  t.match((err as Error).message, /ledger\.mdb.*crash \(SIGSEGV\).*page structure is damaged/s);
  t.match((err as Error).message, /restore the directory from a backup/);
  t.same(
    seen[0]?.map((p) => p.slice(data.length + 1)),
    ['ledger.mdb', 'pending.mdb'],
  );
  const skipped = await preflight(data, () => openEnv(data), {
    scan: false,
    scanner: async () => {
      throw new Error('not called');
    },
  });
  await skipped.close();
  t.pass('--start-scan off does not scan');
});

t.test('--start-scan takes on or off', async (t) => {
  t.equal(loadConfig(['--data-dir', dir]).startScan, true, 'on by default');
  t.equal(loadConfig(['--data-dir', dir, '--start-scan', 'off']).startScan, false);
  t.throws(() => loadConfig(['--data-dir', dir, '--start-scan', 'maybe']), /start scan: expected on or off, got "maybe"/);
});
