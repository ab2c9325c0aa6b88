/**
 * The stores of the id index (src/store/id-index.ts, src/store/id-runs.ts) in a temporary LMDB
 * file, opened as the ledger opens them (sealed records), removed at the end of the test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { open, type RootDatabase } from 'lmdb';
import { openStore } from '../../src/store/checksum.js';
import { openEnv, openPendingEnv } from '../../src/store/db.js';
import { checkLedger, type CheckReport } from '../../src/maintenance/integrity.js';

export function tempIdStores(t: { teardown(fn: () => unknown): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-ids-'));
  const root: RootDatabase = open({ path: join(dir, 'x.mdb'), noSubdir: true });
  t.teardown(async () => {
    await root.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    root,
    blockIds: openStore<Buffer, number>(root, 'ids', { keyEncoding: 'uint32', binary: true }),
    receipts: openStore<Buffer, number>(root, 'receipts', { keyEncoding: 'uint32', binary: true }),
    idRuns: openStore<Buffer, number>(root, 'id_runs', { keyEncoding: 'uint32', binary: true }),
    idChunks: openStore<Buffer, Buffer>(root, 'id_chunks', { keyEncoding: 'binary', binary: true }),
  };
}

/** A random id (128 hex characters). */
export const randomId = (): string => randomBytes(64).toString('hex');
/** An id with the given first 8 hex characters (its tag). */
export const taggedId = (tag: string): string => tag + randomBytes(60).toString('hex');

/** What `cairn check` reports on a stopped node's directory. */
export async function checkDataDir(dir: string): Promise<CheckReport> {
  const db = openEnv(dir);
  const pending = openPendingEnv(dir);
  try {
    return checkLedger(db, pending, dir);
  } finally {
    await db.close();
    await pending.close();
  }
}

/** The value, or a failed test when there is none. */
export function must<T>(v: T | undefined | null): T {
  if (v === undefined || v === null) throw new Error('missing value');
  return v;
}
