/**
 * Offline pruning of old state roots:
 *   npm run -s prune -- --data-dir DIR --keep N
 * Keeps the state of the last N blocks readable (N >= 1) and deletes the Merkle records no
 * kept root reaches. The node must be stopped (the command takes the directory's lock).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { openEnv } from '../store/db.js';
import { lockDataDir, StartupError } from '../store/lock.js';
import { fileProblems } from '../store/preflight.js';
import { pruneStateRoots } from '../store/prune.js';
import { sealExisting } from '../store/checksum.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<number> {
  const d = arg('data-dir') ?? process.env.CAIRN_DATA_DIR;
  const keep = Number(arg('keep'));
  if (!d || !/^[1-9]\d*$/.test(arg('keep') ?? '')) {
    process.stderr.write('usage: npm run -s prune -- --data-dir DIR --keep N   (N >= 1: state roots of the last N blocks stay readable)\n');
    return 2;
  }
  const dir = resolve(d);
  if (!existsSync(dir)) {
    process.stderr.write(`no data directory at ${dir}\n`);
    return 2;
  }
  const lock = await lockDataDir(dir);
  try {
    const files = fileProblems(dir);
    if (files.length) {
      process.stderr.write(`not pruning a damaged directory:\n  ${files.join('\n  ')}\n`);
      return 1;
    }
    const db = openEnv(dir);
    sealExisting(db);
    try {
      const r = await pruneStateRoots(db, keep);
      process.stdout.write(
        `pruned ${dir}: state of blocks ${r.keptFrom}..${r.head} kept (${r.keptRecords} records), ` +
          `${r.removedRecords} records removed (${r.removedBytes} bytes, reused by LMDB for new data)\n`,
      );
      return 0;
    } finally {
      await db.close();
    }
  } finally {
    await lock.release();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof StartupError ? '' : 'prune failed: '}${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof StartupError ? err.exitCode : 1);
  },
);
