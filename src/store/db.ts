/**
 * The one LMDB environment under the data directory. Each thread opens it once; every
 * store is a named sub-database of it, so a block and all its indexes commit together.
 * Sub-database names are listed here and never reused.
 */
import { open, type RootDatabase } from 'lmdb';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';

export function openEnv(dataDir: string): RootDatabase {
  mkdirSync(dataDir, { recursive: true });
  return open({
    path: join(dataDir, 'ledger.mdb'),
    maxDbs: 128,
    // Sync on commit: a 202 promises the batch is on disk.
    noSync: false,
    // Ledger data is mostly random-keyed binary: no compression, a generous map size.
    mapSize: 64 * 1024 * 1024 * 1024,
    pageSize: 8192,
  });
}

/** Names of the ledger sub-databases (written only by the committer thread). */
export const LEDGER_DBS = {
  merkle: 'ledger.merkle',
  blocks: 'ledger.blocks',
  blockByNum: 'ledger.block_by_num',
  batchIndex: 'ledger.batch_index',
  txnIndex: 'ledger.txn_index',
  receipts: 'ledger.receipts',
  meta: 'ledger.meta',
  pending: 'ledger.pending',
  pendingById: 'ledger.pending_by_id',
  invalid: 'ledger.invalid',
} as const;
