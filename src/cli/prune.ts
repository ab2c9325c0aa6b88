/**
 * `cairn prune --data-dir DIR --keep N`: offline pruning of old state roots. Keeps the state
 * of the last N blocks readable (N >= 1) and deletes the Merkle records no kept root
 * reaches. The node must be stopped (the command takes the directory's lock).
 */
import { openEnv } from '../store/db.js';
import { fileProblems } from '../store/preflight.js';
import { sealExisting } from '../store/checksum.js';
import { pruneStateRoots, type PruneResult } from '../maintenance/prune.js';
import { CliError, isMain, jsonRequested, Output, parseOrUsage, runCommand, UsageError } from './args.js';
import { existingDataDir } from './check.js';
import { lockDataDir } from '../store/lock.js';

export const USAGE = `usage: cairn prune [--data-dir DIR] --keep N [--json] [--quiet]
Drops the state of old blocks from a stopped node's data directory: the state as of the last
N blocks stays readable (GET /state?head=…); Merkle records no kept root reaches are deleted.
Blocks, batches and receipts are kept.
  --data-dir DIR   the data directory (default CAIRN_DATA_DIR or ./data)
  --keep N         how many of the latest blocks keep their state (N >= 1)
  --json           one JSON document: {"dir", "head", "kept_from", "kept_records", "removed_records", "removed_bytes"}
exit status: 0 pruned, 1 failed (a damaged directory), 2 usage, no such directory, or the directory is in use by a running node
`;

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;

/** The one line that says what a prune kept and removed. */
export function pruneSummary(dir: string, r: PruneResult): string {
  const blocks = r.keptFrom === r.head ? `block ${r.head}` : `blocks ${r.keptFrom} to ${r.head}`;
  const removed =
    r.removedRecords === 0
      ? 'nothing older to remove'
      : `${plural(r.removedRecords, 'older record')} removed (${plural(r.removedBytes, 'byte')}, reused by LMDB for new data)`;
  return `pruned ${dir}: the state of ${blocks} stays readable (${plural(r.keptRecords, 'Merkle record')}); ${removed}`;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, ['data-dir', 'keep']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.positional.length > 0) throw new UsageError(`unexpected argument ${args.positional[0]}`);
  const keep = args.options.get('keep');
  if (keep === undefined) throw new UsageError('--keep N is required (N >= 1: the state of the last N blocks stays readable)');
  if (!/^[1-9]\d*$/.test(keep)) throw new UsageError(`--keep takes a whole number of blocks, at least 1, got "${keep}"`);
  const out = new Output(args);
  const dir = existingDataDir(args.options.get('data-dir'));
  const lock = await lockDataDir(dir);
  try {
    const files = fileProblems(dir);
    if (files.length) throw new CliError(`not pruning a damaged directory (cairn check --data-dir ${dir} lists the damage): ${files.join('; ')}`);
    const db = openEnv(dir);
    sealExisting(db);
    try {
      const r = await pruneStateRoots(db, Number(keep));
      out.result(
        { dir, head: r.head, kept_from: r.keptFrom, kept_records: r.keptRecords, removed_records: r.removedRecords, removed_bytes: r.removedBytes },
        pruneSummary(dir, r),
      );
      return 0;
    } finally {
      await db.close();
    }
  } finally {
    await lock.release();
  }
}

if (isMain(import.meta.url)) void runCommand('cairn prune', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv));
