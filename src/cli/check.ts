/**
 * `cairn check --data-dir DIR`: integrity check of a stopped data directory. Prints one
 * line per problem (naming the file and record) and a summary line; exits 0 when the
 * directory is clean, 1 when it is not, 2 when a running node holds it (or usage).
 * It takes the directory's lock for its whole run, so a node cannot start meanwhile.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { openEnv, openPendingEnv } from '../store/db.js';
import { lockDataDir } from '../store/lock.js';
import { fileProblems } from '../store/preflight.js';
import { checkLedger } from '../maintenance/integrity.js';
import { sealExisting } from '../store/checksum.js';
import { isMain, parseOrUsage, runCommand, UsageError } from './args.js';

export const USAGE = `usage: cairn check [--data-dir DIR]
Verifies a stopped node's data directory: its files, every block, batch and transaction,
the pending records and the state at the head. Prints each problem and a summary.
  --data-dir DIR   the data directory (default CAIRN_DATA_DIR or ./data)
exit status: 0 clean, 1 problems found, 2 usage or the directory is in use by a running node
`;

/** The data directory of check and prune: --data-dir, CAIRN_DATA_DIR, ./data; it must exist. */
export function existingDataDir(opt: string | undefined): string {
  const dir = resolve(opt ?? (process.env.CAIRN_DATA_DIR || './data'));
  if (!existsSync(dir)) throw new UsageError(`no data directory at ${dir} (--data-dir DIR)`);
  return dir;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, ['data-dir']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.positional.length > 0) throw new UsageError(`unexpected argument ${args.positional[0]}`);
  const dir = existingDataDir(args.options.get('data-dir'));
  const lock = await lockDataDir(dir);
  try {
    const files = fileProblems(dir);
    if (files.length) {
      // LMDB cannot be opened safely on these files: report them and stop here.
      for (const p of files) process.stdout.write(`PROBLEM ${p}\n`);
      process.stdout.write(`checked ${dir}: files not readable by LMDB, ${files.length} problems\n`);
      return 1;
    }
    const db = openEnv(dir);
    sealExisting(db);
    const pending = openPendingEnv(dir);
    try {
      const r = checkLedger(db, pending, dir);
      for (const p of r.problems) process.stdout.write(`PROBLEM ${p}\n`);
      process.stdout.write(
        `checked ${dir}: ${r.blocks} blocks, ${r.batches} batches, ${r.transactions} transactions, ` +
          `${r.pendingRecords} pending records, ${r.stateLeaves} state leaves at the head: ${r.problems.length} problems\n`,
      );
      return r.problems.length ? 1 : 0;
    } finally {
      await pending.close();
      await db.close();
    }
  } finally {
    await lock.release();
  }
}

if (isMain(import.meta.url)) void runCommand('cairn check', USAGE, () => run(process.argv.slice(2)), process.argv.includes('--json'));
