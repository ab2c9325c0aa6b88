/**
 * `cairn <command> …`: one entry for the node and its tools. Each command is its own module
 * in src/cli/ (also runnable alone); this file only picks one. The package's `bin`
 * (scripts/cairn.mjs) runs `cairn start` from the build, as `npm start` does, and every other
 * command from the sources.
 */
import { usage } from '../config.js';
import { isMain, jsonRequested, runCommand, UsageError } from './args.js';

export { runCommand };

export const USAGE = `usage: cairn <command> [options]     (cairn <command> --help for its options)
commands:
  start      run the node (its flags: cairn start --help)
  keygen     make a key pair: --out FILE
  intkey     set|inc|dec <name> <value>, show <name>, list: the intkey family on the ledger
  batch      build, submit <file>…, status <id>…, list: signed BatchList files and batches on the ledger gateway
  token      print a Cylinder admin token for the node API
  circuit    propose, vote, list, show, disband…: circuits between nodes
  check      verify a stopped node's data directory: --data-dir DIR
  prune      drop old state roots of a stopped node: --data-dir DIR --keep N
  alarm      list|clear: the node's storage alarms (a read-only node and why)
  bench      load-test a Sawtooth-compatible ledger: --url URL | --spawn; bench compare A.json B.json
  cluster    init|status|join|remove: nodes that share one chain through etcd
common options (docs/cli.md):
  --json           one JSON document on stdout (the result, or {"error", "exit"}), nothing on stderr
  --quiet          nothing but the result: no progress or notes
  --url URL        the node to talk to; --timeout SECONDS, how long one call to it may take (default 30)
  --help           the command's usage
exit status: 0 done, 1 the operation failed (refused, invalid, unreachable; bench compare: B is slower),
             2 usage or input error (bad flag or value, missing or unreadable file), found before any work;
             3 (intkey, batch) a batch still pending after --wait
`;

type Run = (argv: string[]) => Promise<number> | number;

/** `cairn start`: the node (src/main.ts runs when imported, reads process.argv and exits itself). */
async function start(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage());
    return 0;
  }
  process.argv = [process.argv[0] ?? process.execPath, '../main.js', ...argv];
  await import('../main.js');
  return new Promise<number>(() => undefined); // the node ends the process
}

const COMMANDS: Record<string, () => Promise<Run>> = {
  start: async () => start,
  keygen: async () => (await import('./keygen.js')).run,
  intkey: async () => (await import('./intkey.js')).run,
  batch: async () => (await import('./batch.js')).run,
  token: async () => (await import('./token.js')).run,
  circuit: async () => (await import('./circuit.js')).run,
  check: async () => (await import('./check.js')).run,
  prune: async () => (await import('./prune.js')).run,
  alarm: async () => (await import('./alarm.js')).run,
  bench: async () => (await import('./bench.js')).run,
  cluster: async () => (await import('./cluster.js')).run,
};

/** The command names, for tests and the usage. */
export const COMMAND_NAMES: readonly string[] = Object.keys(COMMANDS);

export async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === undefined) throw new UsageError('missing command');
  const load = COMMANDS[command];
  if (!load) throw new UsageError(`unknown command ${command} (${COMMAND_NAMES.join(', ')})`);
  const c = await load();
  return runCommand(`cairn ${command}`, '', () => c(rest), jsonRequested(rest, command === 'bench'));
}

/** Whether a whole `cairn …` command line asks for JSON (for the errors of the command line itself). */
export function wantsJson(argv: readonly string[]): boolean {
  return jsonRequested(argv.slice(1), argv[0] === 'bench');
}

if (isMain(import.meta.url)) void runCommand('cairn', USAGE, () => run(process.argv.slice(2)), wantsJson(process.argv.slice(2)));
