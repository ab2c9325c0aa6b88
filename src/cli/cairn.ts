/**
 * `cairn <command> …`: one entry for the node and its tools. Each command is its own module
 * in src/cli/ (also runnable alone); this file only picks one. The package's `bin`
 * (scripts/cairn.mjs) runs `cairn start` from the build, as `npm start` does, and every other
 * command from the sources.
 */
import { isMain, runCommand, UsageError } from './args.js';

export { runCommand };

export const USAGE = `usage: cairn <command> [options]     (cairn <command> --help for its options)
commands:
  start      run the node (its flags: cairn start --help)
  keygen     make a key pair: --out FILE
  intkey     set|inc|dec <name> <value>, show <name>, list: the intkey family on the ledger
  batch      submit <file>…, status <id>…, list: batches on the ledger gateway
  token      print a Cylinder admin token for the node API
  circuit    propose, vote, list, show, disband…: circuits between nodes
  check      verify a stopped node's data directory: --data-dir DIR
  prune      drop old state roots of a stopped node: --data-dir DIR --keep N
  bench      load-test a Sawtooth-compatible ledger: --url URL | --spawn; bench compare A.json B.json
common options: --url URL (the node to talk to), --json (JSON output), --help
`;

type Run = (argv: string[]) => Promise<number> | number;

/** Modules that run when imported (they read process.argv and exit themselves). */
async function legacy(file: string, argv: string[]): Promise<number> {
  process.argv = [process.argv[0] ?? process.execPath, file, ...argv];
  await import(file);
  return new Promise<number>(() => undefined); // the module ends the process
}

/**
 * `circuit` prints `<HTTP status> <body>` lines; with --json each becomes
 * {"status": N, "body": <JSON body or text>}.
 */
async function circuit(argv: string[]): Promise<number> {
  if (argv.includes('--json')) {
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      const m = /^(\d{3})(?: ([\s\S]*?))?\n?$/.exec(text);
      if (!m) return write(chunk, ...(rest as []));
      let body: unknown = m[2] ?? null;
      try {
        body = m[2] ? JSON.parse(m[2]) : null;
      } catch {
        // not JSON: kept as text
      }
      return write(`${JSON.stringify({ status: Number(m[1]), body })}\n`);
    }) as typeof process.stdout.write;
  }
  const rest = argv.filter((a) => a !== '--json');
  // circuit.ts answers a bare --help with exit 2 (no command): give it one, so help exits 0.
  if (rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h')) rest.unshift('help');
  return legacy('./circuit.js', rest);
}

interface Command {
  run: Run;
  /** The command's usage, printed with its usage errors. */
  usage: string;
}

const module = (m: { run: Run; USAGE: string }): Command => ({ run: m.run, usage: m.USAGE });

const COMMANDS: Record<string, () => Promise<Command>> = {
  start: async () => ({ run: (argv) => legacy('../main.js', argv), usage: '' }),
  keygen: async () => module(await import('./keygen.js')),
  intkey: async () => module(await import('./intkey.js')),
  batch: async () => module(await import('./batch.js')),
  token: async () => module(await import('./token.js')),
  circuit: async () => ({ run: circuit, usage: '' }),
  check: async () => ({ run: (argv) => legacy('./check.js', argv), usage: '' }),
  prune: async () => ({ run: (argv) => legacy('./prune.js', argv), usage: '' }),
  bench: async () => module(await import('./bench.js')),
};

export async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === undefined) throw new UsageError('missing command');
  const load = COMMANDS[command];
  if (!load) throw new UsageError(`unknown command ${command}`);
  const c = await load();
  return runCommand(`cairn ${command}`, c.usage, () => c.run(rest));
}

if (isMain(import.meta.url)) void runCommand('cairn', USAGE, () => run(process.argv.slice(2)));
