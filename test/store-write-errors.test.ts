/**
 * Failed commits lmdb-js only prints (src/store/write-errors.ts): the error of a failed
 * write is told apart from any other print, still printed, and handed to the watcher (the
 * committer thread fails at once with it instead of holding its blocks until the stall
 * limit; the disk-full test runs that path on a real full disk).
 */
import t from 'tap';
import { sep } from 'node:path';
import { isLmdbWriteError, watchLmdbWriteErrors } from '../src/store/write-errors.js';

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

t.test('the watcher gets each failed write; every print still happens', async (t) => {
  const printed: unknown[][] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => void printed.push(args);
  t.teardown(() => {
    console.error = original;
  });
  const seen: number[] = [];
  watchLmdbWriteErrors((err) => seen.push(err.code));
  console.error(lmdbError(5));
  console.error('mdb_page_spill error 28');
  console.error(lmdbError('EIO'));
  t.same(seen, [5], 'only the write error reached the watcher');
  t.equal(printed.length, 3, 'all three printed');
  // A second watcher replaces the first: one per thread.
  const second: number[] = [];
  watchLmdbWriteErrors((err) => second.push(err.code));
  console.error(lmdbError(28));
  t.same(seen, [5], 'the first watcher is gone');
  t.same(second, [28]);
  t.equal(printed.length, 4, 'no double print after a second install');
});
