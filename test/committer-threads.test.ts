/**
 * The committer threads as the recovery from a write error uses them (src/ledger/
 * committer-client.ts): a spare thread, started ahead with its modules loaded, takes a
 * ledger and runs it; a spare that is gone is not used (a new thread starts instead); and
 * every committer thread on one environment can be ended at once (the node's and the
 * circuits' share it: a broken environment is reopened only once none holds it), leaving the
 * threads of other environments alone. The ledgers of a process share one spare.
 */
import { withoutLoaders, workerStart } from '../src/ledger/worker-file.js';
import { verifyThreadFlags } from '../src/ledger/verify-pool.js';
import { TS_ARGS } from './helpers/child.js';
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { CommitterClient, SpareHolder, SpareThread, type CommitterHandlers } from '../src/ledger/committer-client.js';
import type { CommitterOptions } from '../src/ledger/protocol.js';

const admin = new Signer(randomPrivateKey());

/** A circuit ledger's committer options (a circuit ledger runs without a pending pool or a key file). */
function circuitOpts(dataDir: string, circuitId: string): CommitterOptions {
  return {
    dataDir,
    nodeKeyFile: '',
    maxBatchesPerBlock: 0,
    minBlockIntervalMs: 0,
    queueMultiplier: 1,
    queueInitialAverage: 1,
    circuit: { circuitId, serviceId: 'a', coordinator: true, adminKeys: [admin.publicKey], roundMax: 10 },
  };
}

function handlers(faults: string[]): () => CommitterHandlers {
  return () => ({ onBlock: () => undefined, onFault: (_, code) => void faults.push(code) });
}

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-threads-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('a spare thread takes a ledger and runs it; a spare that is gone is not used', async (t) => {
  const dir = tempDir(t);
  const spare = new SpareThread();
  const faults: string[] = [];
  const { client, ready } = await CommitterClient.start(circuitOpts(dir, 'c0'), handlers(faults), spare);
  t.equal(ready.head.blockNum, 0, 'the ledger runs on the spare thread: its initial state is written');
  t.equal(spare.take(), null, 'the spare is used up');
  await client.close();
  // A spare closed before use: the start makes a thread of its own.
  const gone = new SpareThread();
  await gone.close();
  const again = await CommitterClient.start(circuitOpts(dir, 'c0'), handlers(faults), gone);
  t.equal(again.ready.head.blockNum, 0, 'started on a new thread');
  await again.client.close();
  t.same(faults, [], 'no fault');
});

t.test('the ledgers of a process share one spare: taken by one recovery, ended when the last ledger leaves', async (t) => {
  const holder = new SpareHolder();
  holder.ensure();
  t.notOk(holder.started, 'no spare before a ledger joined');
  const leaveA = holder.join();
  const leaveB = holder.join();
  holder.ensure();
  const first = holder.take();
  t.ok(first, 'a spare for the ledgers');
  holder.ensure();
  holder.ensure();
  t.ok(holder.started, 'one more after it was taken, however often asked');
  const dir = tempDir(t);
  const faults: string[] = [];
  const { client } = await CommitterClient.start(circuitOpts(dir, 'c0'), handlers(faults), first);
  await client.close();
  t.equal(holder.lastBlockAt, 0, 'no block yet');
  holder.blockCommitted();
  t.ok(holder.lastBlockAt > 0, "a block of any ledger is the process's last");
  const spare = holder.take();
  holder.ensure();
  t.ok(holder.started, 'still joined: a spare again');
  await spare?.close();
  await leaveA();
  await leaveA();
  t.ok(holder.started, 'one ledger left (twice): the spare stays for the other');
  await leaveB();
  t.notOk(holder.started, 'the last ledger left: the spare ended');
  holder.ensure();
  t.notOk(holder.started, 'and none is started without a ledger');
  t.same(faults, [], 'no fault');
});

t.test('every committer thread on one environment ends at once; others run on', async (t) => {
  const shared = tempDir(t);
  const other = tempDir(t);
  const faults: Record<string, string[]> = { a: [], b: [], c: [] };
  const a = await CommitterClient.start(circuitOpts(shared, 'c1'), handlers(faults.a ?? []));
  const b = await CommitterClient.start(circuitOpts(join(shared, '.'), 'c2'), handlers(faults.b ?? []));
  const c = await CommitterClient.start(circuitOpts(other, 'c3'), handlers(faults.c ?? []));
  await CommitterClient.endAll(shared);
  t.same(faults, { a: ['THREAD_EXITED'], b: ['THREAD_EXITED'], c: [] }, 'both threads on the environment ended, each owner told');
  await CommitterClient.endAll(shared);
  t.same(faults.a, ['THREAD_EXITED'], 'ending again finds none');
  c.client.tell({ type: 'intake', batches: [] });
  await c.client.close();
  t.same(faults.c, [], 'the thread of the other environment ran on and closed cleanly');
  await a.client.close();
  await b.client.close();
});

t.test("a thread of a process that runs from a compiled copy of the sources starts without the process's module loaders", async (t) => {
  const argv = [
    '--enable-source-maps',
    '--import=file:///a/register.mjs',
    '--import',
    'tsx',
    '--loader',
    './l.mjs',
    '--experimental-loader=x',
    '--max-old-space-size=64',
  ];
  t.same(withoutLoaders(argv), ['--enable-source-maps', '--max-old-space-size=64'], 'both spellings of each loader flag, and the value after one');
  t.same(withoutLoaders(['--import']), [], 'a flag whose value is missing');
  t.same(withoutLoaders(['--imports-are-not-this=1', '--trace-warnings']), ['--imports-are-not-this=1', '--trace-warnings'], 'other flags pass');
  // The tests' own processes run from such a copy (test/loader/register.mjs): their threads start without loaders.
  if (process.env.CAIRN_DEV_BUILD) t.same(workerStart(), { execArgv: withoutLoaders(process.execArgv) });
  else t.same(workerStart(), {}, 'from the sources, a thread gets the process flags as Node gives them');
});

// piscina loads a pool thread's file with require() first; on a Node that can require() ES
// modules, closing the pool while a thread was still in that load aborted the whole process
// (a V8 fatal error): a node stopped within a second of its start died by SIGABRT. The race is
// narrow: by hand, a run of 12 pools closed 20 to 152 ms after their start aborted about one
// time in three; the run below hit it in none of five runs of the old code. What does not
// depend on timing is the flag that keeps piscina off require().
t.test('a verify pool closed while its thread still loads: the thread ends, the process lives', async (t) => {
  // Run as a built node runs: from the compiled copy (laid out as dist/) with no loader, and
  // with a per-process V8 flag as `npm start` passes one (a thread refuses it in its own list).
  const devBuild = process.env.CAIRN_DEV_BUILD;
  const pool = devBuild
    ? pathToFileURL(join(devBuild, 'src', 'ledger', 'verify-pool.js')).href
    : pathToFileURL(resolve('src/ledger/verify-pool.ts')).href;
  const script = `const { VerifyPool } = await import(${JSON.stringify(pool)});
for (let i = 0; i < 24; i++) {
  const pool = new VerifyPool({ threads: 1, families: ['intkey'], onVerified() {}, onFailed() {} });
  await new Promise((r) => setTimeout(r, 10 + i * 10));
  await pool.destroy();
}
process.stdout.write('closed all');`;
  const dir = mkdtempSync(join(tmpdir(), 'cairn-pool-close-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'close.mjs'), script);
  const args = devBuild ? ['--enable-source-maps', '--initial-old-space-size=64'] : TS_ARGS;
  const env = { ...process.env };
  delete env.CAIRN_DEV_BUILD; // not a process of the tests: its threads get the pool's own list
  const r = spawnSync(process.execPath, [...args, join(dir, 'close.mjs')], { encoding: 'utf8', timeout: 120_000, env });
  t.equal(r.signal, null, `not ended by a signal ${r.stderr.slice(0, 300)}`);
  t.equal(r.status, 0, r.stderr.slice(0, 300));
  t.equal(r.stdout, 'closed all');
  if ((process.features as { require_module?: boolean }).require_module) {
    t.ok(verifyThreadFlags()?.includes('--no-experimental-require-module'), 'pool threads do not require() their file');
  } else t.equal(verifyThreadFlags(), workerStart().execArgv, 'no such flag on a Node without require() of ES modules');
});
