/**
 * Failed commits lmdb-js only prints (src/store/write-errors.ts): the error of a failed
 * write is told apart from any other print, still printed, and handed to the watcher (the
 * committer thread fails at once with it instead of holding its blocks until the stall
 * limit; the disk-full test runs that path on a real full disk). A print is attributed to the
 * oldest write of the thread still in flight: one that comes when no write is in flight (its
 * write settled before, or was made before a recovery) is stale and stops nothing, while a
 * real error of a later write does (test/ledger-transient-eio.test.ts runs it in a node).
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { isLmdbWriteError, trackWrite, watchLmdbWriteErrors, watchStuckWriter, writerStuck, WriteAttribution } from '../src/store/write-errors.js';
import { STUCK, reopenEnv, reopenable } from '../src/store/reopen.js';
import { openEnv } from '../src/store/db.js';

const lmdbError = (code: unknown, where = `file://${sep}x${sep}node_modules${sep}lmdb${sep}write.js:516:7`): Error => {
  const e = new Error('Input/output error');
  Object.assign(e, { code });
  e.stack = `Error: Input/output error\n    at Function.<anonymous> (${where})`;
  return e;
};

t.test('only an errno error thrown from the write path of lmdb-js counts', async (t) => {
  t.ok(isLmdbWriteError(lmdbError(5)), 'EIO from write.js');
  t.ok(isLmdbWriteError(lmdbError(28)), 'ENOSPC from write.js');
  t.notOk(isLmdbWriteError(lmdbError('EIO')), 'a string code (a Node.js fs error)');
  t.notOk(isLmdbWriteError(lmdbError(undefined)), 'no code');
  t.notOk(isLmdbWriteError(lmdbError(0)), 'code 0');
  t.notOk(isLmdbWriteError(lmdbError(5, '/srv/app/src/other/write.js:1:1')), 'another write.js');
  t.notOk(isLmdbWriteError('Write error: No space left on device'), 'a string');
  t.notOk(isLmdbWriteError({ code: 5, stack: `${sep}lmdb${sep}write.js` }), 'not an Error');
});

/** Replaces console.error with a recorder for the test (the watcher wraps whatever is there). */
function capturePrints(t: Test): unknown[][] {
  const printed: unknown[][] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => void printed.push(args);
  t.teardown(() => {
    console.error = original;
  });
  return printed;
}

t.test('the attribution: the oldest write in flight, none once all settled', async (t) => {
  const a = new WriteAttribution();
  t.equal(a.attribute(), null, 'nothing in flight');
  const w1 = a.begin('block 1');
  const w2 = a.begin('block 2');
  t.same(a.attribute(), w1, 'the oldest');
  a.end(w1);
  t.same(a.attribute(), w2);
  a.end(w2);
  t.equal(a.attribute(), null);
  t.equal(a.size, 0);
  a.end(w2);
  t.equal(a.size, 0, 'ending twice is harmless');
});

t.test('trackWrite: in flight until the write settles, resolved or rejected', async (t) => {
  const printed = capturePrints(t);
  const seen: string[] = [];
  watchLmdbWriteErrors({ onError: (_, w) => seen.push(w.what), onStale: () => seen.push('stale') });
  let resolve!: () => void;
  const ok = trackWrite('the ok write', new Promise<void>((r) => (resolve = r)));
  console.error(lmdbError(5));
  resolve();
  await ok;
  console.error(lmdbError(5));
  let reject!: (e: Error) => void;
  const failing = trackWrite('the failing write', new Promise<void>((_, j) => (reject = j)));
  reject(new Error('Commit failed'));
  await t.rejects(failing, /Commit failed/, 'the caller still gets the rejection');
  console.error(lmdbError(5));
  t.same(seen, ['the ok write', 'stale', 'stale']);
  // A write names its environment: the pending pool's cleanup is not the ledger's write.
  const envs: string[] = [];
  watchLmdbWriteErrors({ onError: (_, w) => envs.push(`${w.what} (${w.env})`) });
  const cleanup = trackWrite('the pending pool cleanup', new Promise<void>(() => undefined), 'pending');
  console.error(lmdbError(5));
  t.same(envs, ['the pending pool cleanup (pending)']);
  t.ok(cleanup instanceof Promise);
  t.equal(printed.length, 4, 'every print printed');
});

t.test('writes of two environments in flight: the print is about the one that does not succeed', async (t) => {
  const printed = capturePrints(t);
  const writes = new WriteAttribution();
  const seen: string[] = [];
  watchLmdbWriteErrors({ onError: (_, w) => seen.push(`${w.what} (${w.env})`) }, writes);
  t.same(writes.candidates(), [], 'nothing in flight');
  // The committer's block (ledger.mdb fails) and its pending pool cleanup, side by side: the
  // cleanup is older, yet its environment's commit succeeds.
  const cleanup = writes.begin('the pending pool cleanup', 'pending');
  const block = writes.begin('the write of block 9');
  const later = writes.begin('the write of block 10');
  t.same(writes.candidates(), [cleanup, block], 'the oldest write of each environment');
  console.error(lmdbError(5));
  t.same(seen, [], 'undecided while both are in flight');
  writes.end(cleanup, true);
  await new Promise((r) => setImmediate(r));
  t.same(seen, ['the write of block 9 (ledger)'], 'the environment whose write succeeded is not the one that failed');
  writes.end(block, false);
  writes.end(later, false);

  // The other way round: the cleanup is rejected (pending.mdb fails) while a block is in flight.
  const block2 = writes.begin('the write of block 11');
  const cleanup2 = writes.begin('the pending pool cleanup', 'pending');
  console.error(lmdbError(5));
  writes.end(cleanup2, false);
  await new Promise((r) => setImmediate(r));
  t.same(seen.at(-1), 'the pending pool cleanup (pending)', 'a rejected write is the failed one');
  writes.end(block2, true);
  await new Promise((r) => setImmediate(r));
  t.equal(seen.length, 2, 'decided once');

  // Neither settles (both environments fail, or hang): the oldest, after the wait.
  const a = writes.begin('the pending pool cleanup', 'pending');
  const b = writes.begin('the write of block 12');
  t.same(await writes.attributeSettled([a, b], 20), a, 'the oldest after the wait');
  // A candidate that settled before the wait began leaves the other.
  writes.end(a, true);
  t.same(await writes.attributeSettled([a, b], 1_000), b, 'the one still in flight');
  writes.end(b, true);
  t.same(await writes.attributeSettled([a, b], 1_000), a, 'none in flight: the oldest named');
  // Both succeed while waited for: the last one (a print never stops a write that succeeded
  // in practice, as one of them failed; this only ends the wait).
  const c = writes.begin('the pending pool cleanup', 'pending');
  const d = writes.begin('the write of block 13');
  const both = writes.attributeSettled([c, d], 1_000);
  writes.end(c, true);
  writes.end(d, true);
  t.same(await both, d);
  t.equal(printed.length, 2, 'every print printed');
});

t.test('a print after a recovery, from the earlier write, stops nothing; a new error does', async (t) => {
  const printed = capturePrints(t);
  // The committer's side, as workers/committer.ts wires it, with a test's own attribution.
  const writes = new WriteAttribution();
  const stops: string[] = [];
  const stale: number[] = [];
  watchLmdbWriteErrors({ onError: (err, w) => stops.push(`${w.what}: ${err.code}`), onStale: (err) => stale.push(err.code) }, writes);
  // A round's write fails: lmdb-js prints it while the write is in flight: the committer stops.
  const failed = writes.begin('the write of block 7');
  console.error(lmdbError(5));
  t.same(stops, ['the write of block 7: 5'], 'the error of the write in flight stops the committer');
  // The recovery: the failed write is given up, a new committer probes and writes block 7 again.
  writes.end(failed);
  const probe = writes.begin('a ledger probe write');
  writes.end(probe);
  // Now the print of the earlier write comes (a second print of the same failed batch): no
  // write in flight made it, so it stops nothing.
  console.error(lmdbError(5));
  t.same(stops, ['the write of block 7: 5'], 'the stale print did not stop the new committer');
  t.same(stale, [5], 'it is reported as stale');
  // A real new error, while the new committer writes block 7 again: it stops it.
  const again = writes.begin('the write of block 7');
  console.error(lmdbError(28));
  t.same(stops, ['the write of block 7: 5', 'the write of block 7: 28'], 'a new error of a write in flight stops it');
  writes.end(again);
  t.equal(printed.length, 3, 'every print still printed');
});

t.test('only failed-write errors reach the watcher; a second watcher replaces the first', async (t) => {
  const printed = capturePrints(t);
  const writes = new WriteAttribution();
  writes.begin('a write that hangs');
  const seen: number[] = [];
  watchLmdbWriteErrors({ onError: (err) => seen.push(err.code) }, writes);
  console.error(lmdbError(5));
  console.error('mdb_page_spill error 28');
  console.error(lmdbError('EIO'));
  t.same(seen, [5], 'only the write error reached the watcher');
  t.equal(printed.length, 3, 'all three printed');
  const second: number[] = [];
  watchLmdbWriteErrors({ onError: (err) => second.push(err.code) }, writes);
  console.error(lmdbError(28));
  t.same(seen, [5], 'the first watcher is gone');
  t.same(second, [28]);
  t.equal(printed.length, 4, 'no double print after a second install');
  // A watcher without onStale: a stale print is only printed.
  const none = new WriteAttribution();
  watchLmdbWriteErrors({ onError: (err) => second.push(err.code) }, none);
  console.error(lmdbError(5));
  t.same(second, [28], 'no write in flight: not an error of this thread');
  t.equal(printed.length, 5);
});

// Last: it leaves this process's writer marked stuck for good.
t.test('MDB_PANIC printed by the write path: the writer is stuck; the environment is not reopened in place', async (t) => {
  const printed = capturePrints(t);
  watchStuckWriter();
  console.error(lmdbError(-30795, `file://${sep}x${sep}node_modules${sep}lmdb${sep}read.js:1:1`));
  t.notOk(writerStuck(), 'not from the write path');
  console.error(lmdbError(-30795));
  t.ok(writerStuck(), 'the writer holds its lock for good');
  t.equal(printed.length, 2, 'both printed');
  const dir = mkdtempSync(join(tmpdir(), 'cairn-stuck-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const root = reopenable(() => openEnv(dir));
  t.teardown(() => root.close());
  await t.rejects(reopenEnv(root), { message: STUCK }, 'a reopen would wait for ever: refused, the node must be restarted');
  t.match(STUCK, /restart the node/);
});
