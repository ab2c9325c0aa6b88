/**
 * The environment reopened under its stores (src/store/reopen.ts), as the recovery from a
 * failed meta-page write does it (test/ledger-transient-eio.test.ts runs that in a node):
 * the store objects handed out before work on the new handle, reads and writes alike, the
 * checksum layer's `get` stays in place, and a broken environment is told from a sound one.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEnv } from '../src/store/db.js';
import { openStore, sealExisting } from '../src/store/checksum.js';
import { CorruptRecordError } from '../src/store/alarms.js';
import { envPanicked, reopenable, reopenCount, reopenEnv } from '../src/store/reopen.js';

t.test('stores opened before a reopen read and write through the new handle', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-reopen-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const root = reopenable(() => openEnv(dir));
  t.teardown(() => root.close());
  sealExisting(root);
  const sealed = openStore<{ n: number }, string>(root, 'test.sealed');
  const raw = root.openDB<Buffer, string>('test.raw', { encoding: 'binary' });
  await sealed.put('a', { n: 1 });
  await raw.put('a', Buffer.from('one'));
  const envBefore = (root as unknown as { env: unknown }).env;
  t.equal(reopenCount(root), 0);
  t.notOk(envPanicked(root), 'a sound environment');

  await reopenEnv(root);
  t.equal(reopenCount(root), 1, 'reopened once');
  t.not((root as unknown as { env: unknown }).env, envBefore, 'a new native handle under the same root object');
  t.same(sealed.get('a'), { n: 1 }, 'a read through a store opened before');
  t.same(raw.get('a'), Buffer.from('one'));
  await sealed.put('b', { n: 2 });
  await root.transaction(() => {
    raw.put('b', Buffer.from('two'));
    sealed.put('c', { n: 3 });
  });
  await root.flushed;
  t.same(
    [...sealed.getRange({})].map(({ key, value }) => [key, value]),
    [
      ['a', { n: 1 }],
      ['b', { n: 2 }],
      ['c', { n: 3 }],
    ],
  );
  t.same(raw.get('b'), Buffer.from('two'));
  // A store opened after the reopen, and a second reopen.
  const later = openStore<number, string>(root, 'test.later');
  await later.put('x', 9);
  await reopenEnv(root);
  t.equal(later.get('x'), 9);
  t.same(sealed.get('c'), { n: 3 });

  // The checksum layer's get is still the one in place: a damaged record names its store.
  const bare = root.openDB<Buffer, string>('test.sealed', { encoding: 'binary' });
  const rec = bare.get('a');
  if (!rec) throw new Error('record a is missing');
  const bad = Buffer.from(rec);
  bad[bad.length - 1] = (bad[bad.length - 1] ?? 0) ^ 0xff;
  await bare.put('a', bad);
  t.throws(() => sealed.get('a'), CorruptRecordError, 'the sealed get still checks');
  t.throws(() => sealed.get('a'), /test\.sealed key/, 'and names the store and the key');
});

t.test('only an environment made reopenable can be reopened', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-reopen-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const plain = openEnv(dir);
  t.teardown(() => plain.close());
  await t.rejects(reopenEnv(plain), /cannot be reopened in place/);
  t.equal(reopenCount(plain), 0);
});

t.test('an environment whose reads fail with MDB_PANIC counts as broken; other errors do not', async (t) => {
  const fake = (message: string): never =>
    ({
      resetReadTxn: () => undefined,
      getStats: () => {
        throw new Error(message);
      },
    }) as never;
  t.ok(envPanicked(fake('MDB_PANIC: Update of meta page failed or environment had fatal error')));
  t.ok(envPanicked(fake('Invalid argument: No transaction to renew')));
  t.notOk(envPanicked(fake('Input/output error')), 'another error is not a broken environment');
});
