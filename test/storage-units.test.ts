/**
 * The storage-fault pieces on their own: which errors are storage alarms (and which are
 * not), the alarm board, the time limit of durable waits, sealed records, and the one-time
 * sealing of a data directory written before the checksums.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { AlarmBoard, classifyInDir, classifyStorageError, CorruptRecordError, StorageStalled, withinTime } from '../src/store/alarms.js';
import { openStore, seal, sealExisting, unseal } from '../src/store/checksum.js';

t.test('what counts as a storage error', async (t) => {
  const err = (message: string, code?: string | number): Error => Object.assign(new Error(message), code === undefined ? {} : { code });
  t.same(classifyStorageError(err('write failed', 'ENOSPC'), 'pending.mdb'), { kind: 'NOSPACE', cause: 'disk full (pending.mdb)' });
  t.same(classifyStorageError(err('x', 28), 'ledger.mdb'), { kind: 'NOSPACE', cause: 'disk full (ledger.mdb)' });
  t.equal(classifyStorageError(err('MDB_MAP_FULL: Environment mapsize limit reached'), 'ledger.mdb')?.kind, 'NOSPACE');
  t.same(classifyStorageError(err('Input/output error: Attempting to write page at position 1', 5), 'ledger.mdb'), {
    kind: 'IO',
    cause: 'I/O error on ledger.mdb',
  });
  t.equal(classifyStorageError(err('EIO: injected'), 'ledger.mdb')?.kind, 'IO');
  t.equal(classifyStorageError(err('read-only file system', 'EROFS'), 'ledger.mdb')?.kind, 'IO');
  t.match(classifyStorageError(err('Commit failed (see commitError for details)'), 'ledger.mdb'), {
    kind: 'IO',
    cause: /^write error on ledger\.mdb/,
  });
  t.match(classifyStorageError(err('MDB_CORRUPTED: Located page was wrong type'), 'ledger.mdb'), {
    kind: 'CORRUPT',
    cause: /^damaged page in ledger\.mdb/,
  });
  t.match(classifyStorageError(err('block 3 write failed: storage stalled: the sync of block 3 did not complete within 15 s'), 'ledger.mdb'), {
    kind: 'STALLED',
    cause: /^storage stalled: the sync of block 3 .* \(ledger\.mdb\)$/,
  });
  t.equal(classifyStorageError(new StorageStalled('storage stalled: x'), 'pending.mdb')?.kind, 'STALLED');
  t.same(classifyStorageError(new CorruptRecordError('ledger.mdb', 'ledger.blocks key ab'), 'x'), {
    kind: 'CORRUPT',
    cause: 'corrupt record in ledger.mdb: ledger.blocks key ab (checksum mismatch)',
  });
  // Not storage: a network error a handler met, a plain bug, a non-error.
  t.equal(classifyStorageError(err('connect ECONNREFUSED 127.0.0.1:9', 'ECONNREFUSED'), 'ledger.mdb'), null);
  t.equal(classifyStorageError(new TypeError('x is not a function'), 'ledger.mdb'), null);
  t.equal(classifyStorageError('a string', 'ledger.mdb'), null);
  // An I/O error with room on the disk stays an I/O error (the test's temp directory has room).
  t.equal(classifyInDir(err('x', 'EIO'), 'ledger.mdb', tmpdir())?.kind, 'IO');
  t.equal(classifyInDir(err('x', 'EIO'), 'ledger.mdb', '/no/such/dir')?.kind, 'IO', 'no file system figures: kept');
  t.equal(classifyInDir(err('x', 'ENOSPC'), 'ledger.mdb', tmpdir())?.kind, 'NOSPACE');
});

t.test('the alarm board: the first cause of a kind stays; listeners; clear by kind', async (t) => {
  const b = new AlarmBoard();
  const seen: string[] = [];
  const off = b.onChange((up, a) => seen.push(`${up ? '+' : '-'}${a.kind}`));
  t.equal(b.summary(), null);
  t.notOk(b.has());
  b.raise('IO', 'I/O error on ledger.mdb');
  b.raise('IO', 'another cause');
  b.raise('CORRUPT', 'corrupt record');
  t.equal(b.summary(), 'IO: I/O error on ledger.mdb; CORRUPT: corrupt record');
  t.ok(b.has('CORRUPT'));
  t.same(
    b.clear(['IO']).map((a) => a.kind),
    ['IO'],
  );
  t.same(
    b.list().map((a) => a.kind),
    ['CORRUPT'],
  );
  off();
  b.clear();
  t.same(seen, ['+IO', '+CORRUPT', '-IO'], 'one event per change, none after the listener is gone');
  t.notOk(b.has());
});

t.test('withinTime: a wait that does not settle in time is a stall', async (t) => {
  t.equal(await withinTime(Promise.resolve(7), 1000, 'x'), 7);
  await t.rejects(withinTime(new Promise(() => undefined), 20, 'a test sync'), {
    name: 'StorageStalled',
    message: /a test sync did not complete within 0.02 s/,
  });
  await t.rejects(withinTime(Promise.reject(new Error('boom')), 1000, 'x'), { message: 'boom' });
});

t.test('sealed records: round trip, a flipped bit, a cut record', async (t) => {
  const body = Buffer.from('a record the node serves');
  const sealed = seal(body);
  t.equal(sealed.length, body.length + 4);
  t.same(unseal(sealed, 'x'), body);
  const flipped = Buffer.from(sealed);
  flipped[3] = (flipped[3] as number) ^ 1;
  t.throws(() => unseal(flipped, 'ledger.blocks key 1'), { name: 'CorruptRecordError', message: /ledger\.blocks key 1 \(checksum mismatch\)/ });
  t.throws(() => unseal(Buffer.from([1, 2]), 'short'), { name: 'CorruptRecordError' });
});

t.test('a data directory from before the checksums is sealed once, in place', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-seal-'));
  const env = open({ path: join(dir, 'ledger.mdb'), maxDbs: 64 });
  t.teardown(async () => {
    await env.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // The former layout: plain msgpack and binary values, and the stores that stay unsealed.
  env.openDB<unknown, string>('ledger.meta', {}).putSync('head', { blockNum: 3, blockId: 'ab' });
  env.openDB<Buffer, string>('ledger.blocks', { encoding: 'binary' }).putSync('ab', Buffer.from('block bytes'));
  env.openDB<Buffer, number>('ledger.block_ids', { keyEncoding: 'uint32', encoding: 'binary' }).putSync(3, Buffer.from('ids'));
  env.openDB<Buffer, Buffer>('ledger.merkle', { keyEncoding: 'binary', encoding: 'binary' }).putSync(Buffer.from([1]), Buffer.from('node'));
  t.equal(sealExisting(env), 3, 'three records sealed (the Merkle record is not)');
  t.equal(sealExisting(env), 0, 'once');
  t.same(openStore<unknown, string>(env, 'ledger.meta').get('head'), { blockNum: 3, blockId: 'ab' });
  t.same(openStore<Buffer, string>(env, 'ledger.blocks', { binary: true }).get('ab'), Buffer.from('block bytes'));
  t.same(openStore<Buffer, number>(env, 'ledger.block_ids', { keyEncoding: 'uint32', binary: true }).get(3), Buffer.from('ids'));
  t.same(env.openDB<Buffer, Buffer>('ledger.merkle', { keyEncoding: 'binary', encoding: 'binary' }).get(Buffer.from([1])), Buffer.from('node'));
  // A sealed store refuses a value of the wrong kind, and names a damaged record by its key.
  const blocks = openStore<Buffer, string>(env, 'ledger.blocks', { binary: true });
  t.throws(() => blocks.putSync('x', 'text' as unknown as Buffer), { message: /stores bytes/ });
  env.openDB<Buffer, string>('ledger.blocks', { encoding: 'binary' }).putSync('bad', Buffer.from('no checksum'));
  t.throws(() => blocks.get('bad'), { name: 'CorruptRecordError', message: /corrupt record in ledger\.mdb: ledger\.blocks key bad/ });
  // A new environment is only marked.
  const fresh = open({ path: join(dir, 'fresh.mdb'), maxDbs: 8 });
  t.equal(sealExisting(fresh), 0);
  await fresh.close();
});
