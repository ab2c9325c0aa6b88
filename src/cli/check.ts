/**
 * `cairn check --data-dir DIR`: integrity check of a stopped data directory. Prints one
 * line per problem (naming the file and record), the families the chain holds, and a
 * summary line that ends in `clean` or the number of problems; exits 0 when the directory is
 * clean, 1 when it is not, 2 when a running node holds it (or usage). A problem is damage
 * only: a record missing, unreadable, or not matching what refers to it; a family run by a
 * transaction processor is none (src/maintenance/integrity.ts).
 * It takes the directory's lock for its whole run, so a node cannot start meanwhile.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { openEnv, openPendingEnv } from '../store/db.js';
import { lockDataDir } from '../store/lock.js';
import { fileProblems } from '../store/preflight.js';
import { checkLedger, type CheckReport } from '../maintenance/integrity.js';
import { sealExisting } from '../store/checksum.js';
import { InputError, isMain, jsonRequested, Output, parseOrUsage, runCommand, UsageError } from './args.js';

export const USAGE = `usage: cairn check [--data-dir DIR] [--json] [--quiet]
Verifies a stopped node's data directory: its files, every block, batch and transaction,
the pending records and the state at the head. Prints each problem, the transaction families
the chain holds, and a summary: "clean", or the number of problems.
  --data-dir DIR   the data directory (default CAIRN_DATA_DIR or ./data)
  --json           one JSON document: {"clean", "problems", "notes", "families", counts…}
  --quiet          only the problems and the summary
exit status: 0 clean, 1 problems found, 2 usage, no such directory, or the directory is in use by a running node
`;

/** The data directory of check and prune: --data-dir, CAIRN_DATA_DIR, ./data; it must exist. */
export function existingDataDir(opt: string | undefined): string {
  const dir = resolve(opt ?? (process.env.CAIRN_DATA_DIR || './data'));
  if (!existsSync(dir)) throw new InputError(`--data-dir: no data directory at ${dir}`);
  if (!statSync(dir).isDirectory()) throw new InputError(`--data-dir: ${dir} is not a directory`);
  return dir;
}

const EMPTY: CheckReport = { blocks: 0, batches: 0, transactions: 0, pendingRecords: 0, stateLeaves: 0, families: [], problems: [], notes: [] };

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, ['data-dir']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.positional.length > 0) throw new UsageError(`unexpected argument ${args.positional[0]}`);
  const out = new Output(args);
  const dir = existingDataDir(args.options.get('data-dir'));
  const lock = await lockDataDir(dir);
  let r: CheckReport;
  let files = false;
  try {
    const damaged = fileProblems(dir);
    if (damaged.length) {
      // LMDB cannot be opened safely on these files: report them and stop here.
      r = { ...EMPTY, problems: damaged };
      files = true;
    } else {
      const db = openEnv(dir);
      sealExisting(db);
      const pending = openPendingEnv(dir);
      try {
        r = checkLedger(db, pending, dir);
      } finally {
        await pending.close();
        await db.close();
      }
    }
  } finally {
    await lock.release();
  }
  const clean = r.problems.length === 0;
  const verdict = clean ? 'clean (0 problems)' : `${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}`;
  const families = r.families.map((f) => `${f.name} ${f.version}${f.builtIn ? '' : ' (transaction processor)'}`).join(', ');
  const text = [
    ...r.problems.map((p) => `PROBLEM ${p}`),
    ...(out.quiet ? [] : r.notes.map((n) => `note: ${n}`)),
    ...(out.quiet || families === '' ? [] : [`families on the chain: ${families}`]),
    files
      ? `checked ${dir}: files not readable by LMDB, ${verdict}`
      : `checked ${dir}: ${r.blocks} blocks, ${r.batches} batches, ${r.transactions} transactions, ` +
        `${r.pendingRecords} pending records, ${r.stateLeaves} state leaves at the head: ${verdict}`,
  ];
  out.result(
    {
      dir,
      clean,
      blocks: r.blocks,
      batches: r.batches,
      transactions: r.transactions,
      pending_records: r.pendingRecords,
      state_leaves: r.stateLeaves,
      families: r.families.map((f) => ({ name: f.name, version: f.version, built_in: f.builtIn })),
      problems: r.problems,
      notes: r.notes,
    },
    text.join('\n'),
  );
  return clean ? 0 : 1;
}

if (isMain(import.meta.url)) void runCommand('cairn check', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv));
