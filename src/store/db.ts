/**
 * The one LMDB environment under the data directory. Each thread opens it once; every
 * store is a named sub-database of it, so a block and all its indexes commit together.
 * Sub-database names are listed in names.ts and never reused.
 */
import { open, type RootDatabase } from 'lmdb';
import { dirname, join } from 'node:path';
import { mkdirSync } from 'node:fs';

export function openEnv(dataDir: string): RootDatabase {
  mkdirSync(dataDir, { recursive: true });
  return open({
    path: join(dataDir, 'ledger.mdb'),
    maxDbs: 1024,
    // Sync on commit: a 202 promises the batch is on disk.
    noSync: false,
    // Ledger data is mostly random-keyed binary: no compression, a generous map size.
    mapSize: 64 * 1024 * 1024 * 1024,
    pageSize: 4096,
  });
}

/**
 * The pending pool lives in an environment of its own, so that acknowledging a batch
 * (one small fsync'd write) never queues behind a block commit. A batch leaves it only
 * after the block or verdict that settles it is durable in the main environment; on
 * restart, entries already settled there are dropped (recovery is idempotent).
 */
export function openPendingEnv(dataDir: string, file = 'pending.mdb'): RootDatabase<Buffer, number> {
  mkdirSync(dataDir, { recursive: true });
  return open<Buffer, number>({
    path: join(dataDir, file),
    encoding: 'binary',
    noSync: false,
    mapSize: 8 * 1024 * 1024 * 1024,
  });
}

/** The data directory of an environment opened by openEnv (another thread opens its own handle there). */
export function dataDirOf(env: RootDatabase): string {
  const path = (env as unknown as { path?: unknown }).path;
  if (typeof path !== 'string') throw new Error('the LMDB environment has no path');
  return dirname(path);
}
