/**
 * Start-up checks of the data directory, run with the directory locked and before the
 * committer starts: file headers (files.ts), the pending pool's identity and every pending
 * record. Anything wrong is a StartupError naming the file and what to do: the node never
 * serves, or seals blocks, on top of a file it knows to be damaged.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { RootDatabase } from 'lmdb';
import { Batch, decode, type BatchMsg } from '../proto/index.js';
import { openPendingEnv } from './db.js';
import { lmdbFileProblem } from './files.js';
import { openLedgerStores } from './ledger-stores.js';
import { isText, MetaRecord } from './meta-record.js';
import { StartupError } from './lock.js';
import { sealExisting } from './checksum.js';
import { isHexId } from '../codec/hex.js';
import { POOL_ID_KEY, decodeSegment } from './pending-pool.js';

/** Key in ledger.meta of the identity of the pending pool this ledger acknowledges into. */
export const POOL_ID_META = 'pending_pool_id';
const POOL_ID = new MetaRecord<string>(POOL_ID_META, isText);

export const LEDGER_FILE = 'ledger.mdb';
export const PENDING_FILE = 'pending.mdb';

export function checkCommand(dir: string): string {
  return `npm run -s check -- --data-dir ${dir}`;
}

/** Header problems of the two LMDB files, one line each. */
export function fileProblems(dir: string): string[] {
  const out: string[] = [];
  for (const name of [LEDGER_FILE, PENDING_FILE]) {
    const p = lmdbFileProblem(join(dir, name));
    if (p) out.push(`${join(dir, name)} ${p}`);
  }
  return out;
}

/**
 * Identity problem of the pending pool, or null. A pool without identity under a ledger
 * that has one was deleted, truncated or replaced: the batches acknowledged into the old
 * pool and not yet committed would silently become UNKNOWN.
 */
export function poolIdentityProblem(db: RootDatabase, pending: RootDatabase<Buffer, number>, dir: string): string | null {
  const meta = openLedgerStores(db).meta;
  const want = POOL_ID.get(meta);
  const have = pending.get(POOL_ID_KEY);
  const file = join(dir, PENDING_FILE);
  if (want === undefined) return null;
  if (have === undefined) {
    return `${file} is not the pending pool this ledger acknowledged batches into (it was deleted, emptied or replaced): acknowledged batches not yet committed would be lost`;
  }
  if (have.toString('hex') !== want) {
    return `${file} belongs to another ledger (its identity ${have.toString('hex')} is not ${want})`;
  }
  return null;
}

/** Damaged pending records, one line each (key, file and what is wrong). */
export function pendingRecordProblems(
  pending: RootDatabase<Buffer, number>,
  dir: string,
  each?: (bytes: Uint8Array, where: string) => string | null,
): string[] {
  const file = join(dir, PENDING_FILE);
  const out: string[] = [];
  for (const { key, value } of pending.getRange({ start: 0 })) {
    const where = `${file}: pending record ${key}`;
    let batches: Uint8Array[];
    try {
      batches = decodeSegment(value);
    } catch (err) {
      out.push(`${where}: ${(err as Error).message}`);
      continue;
    }
    batches.forEach((bytes, i) => {
      let b: BatchMsg;
      try {
        b = decode(Batch, bytes);
      } catch {
        out.push(`${where} batch ${i}: not a decodable Batch`);
        return;
      }
      if (!isHexId(b.headerSignature)) {
        out.push(`${where} batch ${i}: bad batch id`);
        return;
      }
      const p = each?.(bytes, `${where} batch ${i} (${b.headerSignature})`);
      if (p) out.push(p);
    });
  }
  return out;
}

/** Gives a new pool its identity (pool first, then the ledger: a crash between is adopted). */
async function adoptPoolIdentity(db: RootDatabase, pending: RootDatabase<Buffer, number>): Promise<void> {
  const meta = openLedgerStores(db).meta;
  let have = pending.get(POOL_ID_KEY);
  if (have === undefined) {
    have = randomBytes(16);
    await pending.put(POOL_ID_KEY, have);
    await pending.flushed;
  }
  if (POOL_ID.get(meta) === undefined) {
    await POOL_ID.put(meta, have.toString('hex'));
    await db.flushed;
  }
}

function refuse(problems: string[], dir: string): StartupError {
  return new StartupError(
    `the data directory ${dir} is damaged; the node will not start on it:\n  ${problems.join('\n  ')}\n` +
      `Stop here: restore the directory from a backup (ledger.mdb and pending.mdb together), ` +
      `and run \`${checkCommand(dir)}\` to list every problem.`,
  );
}

/**
 * Checks the directory and returns the opened main environment (or throws StartupError). The
 * read of every record (scan.ts) is not part of it: it runs in the background once the node serves.
 */
export async function preflight(dir: string, openMain: () => RootDatabase): Promise<RootDatabase> {
  const files = fileProblems(dir);
  if (files.length) throw refuse(files, dir);
  const db = openMain();
  const pending = openPendingEnv(dir);
  try {
    // Records written before the checksums are sealed once, before anything reads them.
    sealExisting(db);
    const identity = poolIdentityProblem(db, pending, dir);
    if (identity) throw refuse([identity], dir);
    const records = pendingRecordProblems(pending, dir);
    if (records.length) throw refuse(records, dir);
    await adoptPoolIdentity(db, pending);
  } catch (err) {
    await pending.close();
    await db.close();
    throw err;
  }
  await pending.close();
  return db;
}
