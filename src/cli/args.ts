/** Small argument parsing shared by the command-line tools: `--name value`, `--name=value`, flags, positionals. */
export interface Args {
  positional: string[];
  options: Map<string, string>;
  help: boolean;
}

/** `valued` names the options that take a value; any other `--x` is a flag. */
export function parseCliArgs(argv: string[], valued: readonly string[]): Args {
  const positional: string[] = [];
  const options = new Map<string, string>();
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
  }
  return { positional, options, help };
}

/** The gateway URL: --url, then CAIRN_LEDGER_URL, then http://<CAIRN_LEDGER_BIND>, then the default bind. */
export function ledgerUrl(opt: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (opt) return opt.replace(/\/+$/, '');
  if (env.CAIRN_LEDGER_URL) return env.CAIRN_LEDGER_URL.replace(/\/+$/, '');
  const bind = env.CAIRN_LEDGER_BIND || '127.0.0.1:8008';
  const m = /^(.+):(\d+)$/.exec(bind);
  let host = m ? m[1]!.replace(/^\[(.*)\]$/, '$1') : '127.0.0.1';
  // A node bound to every address is reached on loopback.
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::') host = '::1';
  return `http://${host.includes(':') ? `[${host}]` : host}:${m ? m[2] : '8008'}`;
}

/** fetch, with a failure that names the URL and how to point the tool elsewhere. */
export async function fetchOrExplain(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    throw new Error(
      `cannot reach the ledger gateway at ${new URL(url).origin} (${why}). Is the node running? ` +
        'Point this tool at it with --url http://host:port, CAIRN_LEDGER_URL, or CAIRN_LEDGER_BIND=host:port (as the node uses).',
    );
  }
}
