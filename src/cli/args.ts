/** Small argument parsing shared by the command-line tools: `--name value`, `--name=value`, flags, positionals. */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export interface Args {
  positional: string[];
  /** The last value of each option given. */
  options: Map<string, string>;
  /** Every value of each option, in order (for options that may repeat). */
  lists: Map<string, string[]>;
  help: boolean;
}

/** `valued` names the options that take a value; any other `--x` is a flag. */
export function parseCliArgs(argv: string[], valued: readonly string[]): Args {
  const positional: string[] = [];
  const options = new Map<string, string>();
  const lists = new Map<string, string[]>();
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--help' || a === '-h') {
      help = true;
      continue;
    }
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (!valued.includes(name)) throw new Error(`unknown option --${name}`);
    const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new Error(`--${name} needs a value`);
    options.set(name, value);
    lists.set(name, [...(lists.get(name) ?? []), value]);
  }
  return { positional, options, lists, help };
}

/** The gateway URL: --url, then CAIRN_LEDGER_URL, then http://<CAIRN_LEDGER_BIND>, then the default bind. */
export function ledgerUrl(opt: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (opt) return checkedUrl(opt, '--url');
  if (env.CAIRN_LEDGER_URL) return checkedUrl(env.CAIRN_LEDGER_URL, 'CAIRN_LEDGER_URL');
  const bind = env.CAIRN_LEDGER_BIND || '127.0.0.1:8008';
  const m = /^(.+):(\d+)$/.exec(bind);
  let host = m ? m[1]!.replace(/^\[(.*)\]$/, '$1') : '127.0.0.1';
  // A node bound to every address is reached on loopback.
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::') host = '::1';
  return `http://${host.includes(':') ? `[${host}]` : host}:${m ? m[2] : '8008'}`;
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

/** fetch, with a failure that names the URL and how to point the tool elsewhere. */
export async function fetchOrExplain(url: string, init?: RequestInit, what = LEDGER): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    throw new Error(`cannot reach the ${what.name} at ${new URL(url).origin} (${why}). Is the node running? Point this tool at it with ${what.how}.`);
  }
}

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

/** A wrong command line: the command prints its usage and exits 2. */
export class UsageError extends Error {}

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

/**
 * Runs a command and sets the exit status: its return value; 2 for a UsageError, an error's
 * own `exitCode` (a data directory in use: 2), else 1. An error is one line on stderr, `<name>: <message>` (a usage error adds where
 * the usage is), never a stack trace; with `json` it is `{"error": <message>, "exit": N}`.
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
        if (json) process.stderr.write(`${JSON.stringify({ error: message, exit: code })}\n`);
        else process.stderr.write(`${name}: ${message}${err instanceof UsageError ? ` (${name} --help shows the usage)` : ''}\n`);
        return code;
      },
    )
    .then((code) => {
      process.exitCode = code;
      return code;
    });
}

/** parseCliArgs, with its errors as usage errors. */
export function parseOrUsage(argv: string[], valued: readonly string[], flags: readonly string[] = []): Args & { flags: Set<string> } {
  const set = new Set<string>();
  const rest = argv.filter((a) => {
    const name = a.startsWith('--') ? a.slice(2) : '';
    if (flags.includes(name) || (name === 'json' && !valued.includes('json'))) {
      set.add(name);
      return false;
    }
    return true;
  });
  try {
    return { ...parseCliArgs(rest, valued), flags: set };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** Whole seconds from an option, or a usage error naming it. */
export function seconds(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} takes whole seconds, got "${v}"`);
  return Number(v);
}

/** Prints `value` as one JSON line with --json, else the readable `text`. */
export function print(json: boolean, value: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : text.endsWith('\n') || text === '' ? text : `${text}\n`);
}

/** GET a JSON document from the gateway; an error answer becomes an Error with its message. */
export async function getJson<T>(url: string): Promise<T> {
  const r = await fetchOrExplain(url);
  const body = (await r.json().catch(() => ({}))) as T & { error?: { message?: string }; message?: string };
  if (!r.ok) throw new Error(body.error?.message ?? body.message ?? `HTTP ${r.status} from ${url}`);
  return body;
}
