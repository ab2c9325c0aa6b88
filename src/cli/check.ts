/**
 * Integrity check of a stopped data directory:
 *   npm run -s check -- --data-dir DIR
 * Prints one line per problem (naming the file and record) and a summary line; exits 0
 * when the directory is clean, 1 when it is not, 2 when a running node holds it (or usage).
 * It takes the directory's lock for its whole run, so a node cannot start meanwhile.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { openEnv, openPendingEnv } from '../store/db.js';
import { lockDataDir, StartupError } from '../store/lock.js';
import { fileProblems } from '../store/preflight.js';
import { checkLedger } from '../store/integrity.js';
import { sealExisting } from '../store/checksum.js';

function dataDirArg(): string | undefined {
  const i = process.argv.indexOf('--data-dir');
  const v = i > 0 ? process.argv[i + 1] : process.env.CAIRN_DATA_DIR;
  return v ? resolve(v) : undefined;
}

async function main(): Promise<number> {
  const dir = dataDirArg();
  if (!dir) {
    process.stderr.write('usage: npm run -s check -- --data-dir DIR\n');
    return 2;
  }
  if (!existsSync(dir)) {
    process.stderr.write(`no data directory at ${dir}\n`);
    return 2;
  }
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

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof StartupError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(err.exitCode);
    }
    process.stderr.write(`check failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
