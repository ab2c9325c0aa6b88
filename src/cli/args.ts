/**
 * The contract every `cairn` command keeps (docs/cli.md), in one place: the argument parser
 * (`--name value`, `--name=value`, flags, positionals; `--json`, `--quiet` and `--help` on
 * every command), the exit status (0 done, 1 the operation failed, 2 a usage or input error,
 * found before any work starts), the output (`--json`: one JSON document on stdout, nothing
 * on stderr; `--quiet`: the result and nothing else), the input and output files checked up
 * front, and the calls to a server: each with a deadline, and a failure said in our words,
 * naming the server and the flag that points the tool elsewhere.
 */
import { accessSync, constants, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Signer } from '../crypto/secp256k1.js';
import { loadOrCreateKey } from '../store/keys.js';
import { fsReason } from '../store/dirs.js';

export { fsReason };

export interface Args {
  positional: string[];
  /** The last value of each option given. */
  options: Map<string, string>;
  /** Every value of each option, in order (for options that may repeat). */
  lists: Map<string, string[]>;
  /** The flags given (options without a value), `json` and `quiet` among them. */
  flags: Set<string>;
  help: boolean;
}

/** Flags every command takes: JSON instead of text, and nothing but the result. */
export const COMMON_FLAGS = ['json', 'quiet'] as const;

/**
 * `valued` names the options that take a value, `flags` those that do not (with `--json` and
 * `--quiet`, unless `valued` names them); any other `--x` is a usage error. A value may not
 * start with `--` unless given as `--name=value`: `--url --json` is a missing URL, not a URL.
 */
export function parseCliArgs(argv: readonly string[], valued: readonly string[], flags: readonly string[] = []): Args {
  const positional: string[] = [];
  const options = new Map<string, string>();
  const lists = new Map<string, string[]>();
  const set = new Set<string>();
  const isFlag = (name: string): boolean => flags.includes(name) || ((COMMON_FLAGS as readonly string[]).includes(name) && !valued.includes(name));
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--help' || a === '-h') {
      help = true;
      continue;
    }
    if (!a.startsWith('--') || a === '--') {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (isFlag(name)) {
      if (eq > 0) throw new UsageError(`--${name} takes no value`);
      set.add(name);
      continue;
    }
    if (!valued.includes(name)) throw new UsageError(`unknown option --${name}`);
    let value: string | undefined;
    if (eq > 0) value = a.slice(eq + 1);
    else {
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith('--')) {
        value = next;
        i++;
      }
    }
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    options.set(name, value);
    lists.set(name, [...(lists.get(name) ?? []), value]);
  }
  return { positional, options, lists, flags: set, help };
}

/** parseCliArgs (its errors are usage errors). */
export function parseOrUsage(argv: readonly string[], valued: readonly string[], flags: readonly string[] = []): Args {
  return parseCliArgs(argv, valued, flags);
}

/** Whether a command line asks for JSON output: `--json` as a flag (for bench, a bare `--json` or `--json -`). */
export function jsonRequested(argv: readonly string[], jsonTakesFile = false): boolean {
  if (!jsonTakesFile) return argv.includes('--json');
  return argv.some((a, i) => a === '--json=-' || (a === '--json' && (i === argv.length - 1 || argv[i + 1] === '-' || argv[i + 1]?.startsWith('--'))));
}

/** A wrong command line or input (a bad flag or value, a missing or unreadable file): exit 2, before any work. */
export class UsageError extends Error {}

/** A usage error about an input (a file, a directory): exit 2, said without pointing at the usage. */
export class InputError extends UsageError {}

/** An operation that failed (exit 1 unless `exitCode` says otherwise); `details` go into the --json error document. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** Where a command's result and notes go: text or one JSON document; notes only without --json and --quiet. */
export class Output {
  readonly json: boolean;
  readonly quiet: boolean;
  constructor(args: { flags: ReadonlySet<string> } | { json: boolean; quiet: boolean }) {
    if ('flags' in args) {
      this.json = args.flags.has('json');
      this.quiet = args.flags.has('quiet');
    } else {
      this.json = args.json;
      this.quiet = args.quiet;
    }
  }

  /** The result: `value` as one JSON document with --json, else the readable `text` (nothing when empty). */
  result(value: unknown, text: string): void {
    if (this.json) process.stdout.write(`${JSON.stringify(value)}\n`);
    else if (text !== '') process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** A progress or informational line (stderr): none with --json or --quiet. */
  note(text: string): void {
    if (!this.json && !this.quiet) process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  }
}

/**
 * Runs a command and sets the exit status: its return value; 2 for a UsageError, an error's
 * own `exitCode` (a data directory in use: 2), else 1. An error is one line on stderr,
 * `<name>: <message>` (a usage error adds where the usage is), never a stack trace; with
 * `json` it is the one JSON document on stdout, `{"error": <message>, "exit": N, …}`, and
 * stderr stays empty.
 */
export function runCommand(name: string, _usage: string, run: () => Promise<number> | number, json = false): Promise<number> {
  return Promise.resolve()
    .then(run)
    .then(
      (code) => code,
      (err: unknown) => {
        const message = (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
        const own = (err as { exitCode?: unknown } | null)?.exitCode;
        const code = err instanceof UsageError ? 2 : typeof own === 'number' ? own : 1;
        const details = err instanceof CliError ? err.details : {};
        if (json) process.stdout.write(`${JSON.stringify({ error: message, exit: code, ...details })}\n`);
        else {
          const hint = err instanceof UsageError && !(err instanceof InputError) ? ` (${name} --help shows the usage)` : '';
          process.stderr.write(`${name}: ${message}${hint}\n`);
        }
        return code;
      },
    )
    .then((code) => {
      process.exitCode = code;
      return code;
    });
}

/** True when the module at `url` is the script node was started with (not imported by `cairn`). */
export function isMain(url: string): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return pathToFileURL(realpathSync(script)).href === url;
  } catch {
    return false;
  }
}

/** Whole seconds from an option, or a usage error naming it. */
export function seconds(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} takes whole seconds, got "${v}"`);
  return Number(v);
}

// --- Files ---------------------------------------------------------------------------------

/** The bytes of an input file (`-`: stdin), or a usage error naming the flag or argument it came from. */
export function readInput(file: string, from: string): Buffer {
  try {
    return readFileSync(file === '-' ? 0 : file);
  } catch (err) {
    throw new InputError(`${from}: cannot read ${file}: ${fsReason(err)}`);
  }
}

/** Checks, before any work, that `file` can be written (its directory exists and is writable); a usage error naming `from` otherwise. */
export function checkWritable(file: string, from: string): void {
  const path = resolve(file);
  let st: ReturnType<typeof statSync> | undefined;
  try {
    st = statSync(path);
  } catch {
    st = undefined;
  }
  try {
    if (st?.isDirectory()) throw Object.assign(new Error(), { code: 'EISDIR' });
    if (st) accessSync(path, constants.W_OK);
    else {
      const dir = dirname(path);
      if (!statSync(dir).isDirectory()) throw Object.assign(new Error(), { code: 'ENOTDIR' });
      accessSync(dir, constants.W_OK);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const where = code === 'ENOENT' ? `the directory ${dirname(path)} does not exist` : fsReason(err);
    throw new InputError(`${from}: cannot write ${file}: ${where}`);
  }
}

/** The signer of an existing private key file, or a usage error naming the flag. */
export function readKeyFile(file: string, from: string): Signer {
  const hex = readInput(file, from).toString('utf8').trim();
  try {
    return new Signer(hex);
  } catch {
    throw new InputError(`${from}: ${file} does not hold a secp256k1 private key (64 hex digits)`);
  }
}

/** The signer of a key file, made (mode 0600) when it does not exist; a usage error naming the flag when it cannot be read or made. */
export function keyFileOrNew(file: string, from: string): Signer {
  try {
    return loadOrCreateKey(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(`${from}: cannot use ${file}: ${code ? fsReason(err) : 'it does not hold a secp256k1 private key (64 hex digits)'}`);
  }
}

// --- Servers -------------------------------------------------------------------------------

/** What a tool talks to, for the message when it cannot reach it. */
export interface Target {
  name: string;
  how: string;
}
export const LEDGER: Target = {
  name: 'ledger gateway',
  how: '--url http://host:port, CAIRN_LEDGER_URL, or CAIRN_LEDGER_BIND=host:port (as the node uses)',
};
export const NODE_API: Target = {
  name: 'node API',
  how: '--url http://host:port, CAIRN_NODE_URL, or CAIRN_NODE_BIND=host:port (as the node uses)',
};

/**
 * How long one call to a server may take (beyond a wait the call asks the server for): long
 * enough for a node that is busy or verifying a large batch list, short enough that a server
 * that accepted the connection and fell silent does not hold a script for minutes.
 */
export const DEFAULT_TIMEOUT_S = 30;

/** `--timeout SECONDS` (1 or more), the deadline of each call to a server, in ms. */
export function timeoutOption(args: Args): number {
  const s = seconds(args.options.get('timeout'), 'timeout', DEFAULT_TIMEOUT_S);
  if (s < 1) throw new UsageError('--timeout takes whole seconds, at least 1');
  return s * 1000;
}

/** The gateway URL: --url, then CAIRN_LEDGER_URL, then http://<CAIRN_LEDGER_BIND>, then the default bind. */
export function ledgerUrl(opt: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (opt) return checkedUrl(opt, '--url');
  if (env.CAIRN_LEDGER_URL) return checkedUrl(env.CAIRN_LEDGER_URL, 'CAIRN_LEDGER_URL');
  return bindUrl(env.CAIRN_LEDGER_BIND || '127.0.0.1:8008', '8008');
}

/** The node API URL: --url, then CAIRN_NODE_URL, then http://<CAIRN_NODE_BIND>, then the default bind. */
export function nodeUrl(opt: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (opt) return checkedUrl(opt, '--url');
  if (env.CAIRN_NODE_URL) return checkedUrl(env.CAIRN_NODE_URL, 'CAIRN_NODE_URL');
  return bindUrl(env.CAIRN_NODE_BIND || '127.0.0.1:8085', '8085');
}

function bindUrl(bind: string, defaultPort: string): string {
  const m = /^(.+):(\d+)$/.exec(bind);
  let host = m?.[1]?.replace(/^\[(.*)\]$/, '$1') ?? '127.0.0.1';
  // A node bound to every address is reached on loopback.
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::') host = '::1';
  return `http://${host.includes(':') ? `[${host}]` : host}:${m?.[2] ?? defaultPort}`;
}

/** `url` without trailing slashes, or a usage error naming where it came from. */
export function checkedUrl(url: string, from: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`${from}: not a URL: "${url}" (expected http://host:port)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`${from}: expected an http:// or https:// URL, got "${url}"`);
  return url.replace(/\/+$/, '');
}

/** A server's answer, read in full within the call's deadline. */
export interface Answer {
  status: number;
  ok: boolean;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}

/** Why a connection failed, in words (the code kept for searching). */
function connectReason(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code;
  const words: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'the connection was reset',
    ENOTFOUND: 'no such host',
    EAI_AGAIN: 'the host name could not be resolved',
    EHOSTUNREACH: 'no route to the host',
    ENETUNREACH: 'the network is unreachable',
    UND_ERR_SOCKET: 'the connection closed before an answer',
  };
  if (code && words[code]) return `${words[code]}, ${code}`;
  return code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

/**
 * One call to a server, its answer read in full, within `timeoutMs`: a server that cannot be
 * reached or does not answer in time is an error that names it, the deadline and the flags.
 */
export async function call(url: string, init: RequestInit = {}, what: Target = LEDGER, timeoutMs = DEFAULT_TIMEOUT_S * 1000): Promise<Answer> {
  const origin = new URL(url).origin;
  try {
    const r = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    const text = await r.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: r.status, ok: r.ok, text, json };
  } catch (err) {
    const name = (err as Error | null)?.name;
    if (name === 'TimeoutError' || name === 'AbortError')
      throw new CliError(
        `the ${what.name} at ${origin} did not answer within ${timeoutMs / 1000} s (--timeout SECONDS waits longer). Is the node overloaded or stopped?`,
      );
    throw new CliError(
      `cannot reach the ${what.name} at ${origin} (${connectReason(err)}). Is the node running? Point this tool at it with ${what.how}.`,
    );
  }
}

/** The message of an error answer, in the shape of either interface (`{error: {message}}` or `{message}`). */
export function answerMessage(a: Answer): string {
  const body = a.json as { error?: { message?: unknown }; message?: unknown } | undefined;
  const m = body?.error?.message ?? body?.message;
  if (typeof m === 'string' && m !== '') return m;
  return a.text.trim() === '' ? `HTTP ${a.status}` : `HTTP ${a.status}: ${a.text.trim().slice(0, 200)}`;
}

/** GET a JSON document; an error answer becomes an error with the server's message. */
export async function getJson<T>(url: string, what: Target = LEDGER, timeoutMs = DEFAULT_TIMEOUT_S * 1000): Promise<T> {
  const a = await call(url, {}, what, timeoutMs);
  if (!a.ok) throw new CliError(`the ${what.name} answered ${a.status}: ${answerMessage(a)}`);
  if (a.json === undefined) throw new CliError(`the ${what.name} at ${new URL(url).origin} answered ${a.status} with no JSON: is it a Cairn node?`);
  return a.json as T;
}
