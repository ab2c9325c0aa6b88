/**
 * `cairn batch submit|status|list|build`: batches on the ledger gateway, for any family
 * (`build` writes signed BatchList files offline: batch-build.ts).
 * `submit FILE…` posts serialized BatchLists (as the Sawtooth tools write them; `-` reads
 * stdin) and waits for their statuses; `status ID…` asks for statuses; `list` shows the
 * latest batches.
 *
 * Exit status: 0 done (submit: every batch committed), 1 invalid / refused / unreachable,
 * 2 usage error, 3 still pending after the wait.
 */
import { isHexId } from '../codec/hex.js';
import {
  answerMessage,
  call,
  CliError,
  getJson,
  isMain,
  jsonRequested,
  LEDGER,
  ledgerUrl,
  Output,
  parseOrUsage,
  readInput,
  runCommand,
  seconds,
  timeoutOption,
  UsageError,
  type Args,
} from './args.js';

export const USAGE = `usage: cairn batch submit <file|-> ... [--wait SECONDS] [options]   post BatchList files, wait for their statuses
       cairn batch status <batch id> ... [--wait SECONDS] [options]   statuses of batches
       cairn batch list [--limit N] [options]                        the latest batches
       cairn batch build intkey VERB NAME VALUE [VERB NAME VALUE ...] --out FILE [build options]
       cairn batch build raw --family NAME --version V [--input ADDR ...] [--output ADDR ...]
                             (--payload HEX | --payload-file FILE) ... --out FILE [build options]
Builds signed BatchList files and submits, follows and lists batches of any family on the ledger gateway.
options:
  --url URL          ledger gateway (default: CAIRN_LEDGER_URL, else http://<CAIRN_LEDGER_BIND>, else http://127.0.0.1:8008)
  --wait SECONDS     how long to wait for the batches to settle (submit default 10, status default 0)
  --timeout SECONDS  how long one call to the gateway may take, beyond --wait (default 30)
  --json             print JSON instead of text; --quiet: nothing but the result
build options (offline: nothing is sent; submit the file with cairn batch submit FILE):
  --out FILE       the BatchList file to write
  --key FILE       signing key (default <data dir>/keys/client.priv, created when missing)
  --data-dir DIR   data directory for the default key (default CAIRN_DATA_DIR or ./data)
  --per-batch N    transactions per batch (default 1: one batch per transaction, many per file)
  --repeat N       write the transactions N times, each with its own nonce (default 1)
  --input/--output ADDR   state addresses or prefixes the raw transactions read/write (repeatable, or comma-separated)
  --payload HEX, --payload-file FILE   one raw transaction per payload (repeatable)
exit status: 0 committed (list, status: answered; build: written), 1 invalid, refused or failed,
             2 usage or input error (a file that cannot be read, a bad id), 3 still pending
`;

/** The options of `batch build` (batch-build.ts, loaded only for that command). */
const BUILD_OPTIONS = ['out', 'key', 'data-dir', 'per-batch', 'repeat', 'family', 'version', 'input', 'output', 'payload', 'payload-file'];
/** The options that talk to the gateway, not taken by `batch build`. */
const SERVER_OPTIONS = ['url', 'wait', 'timeout', 'limit'];

interface Status {
  id: string;
  status: string;
  invalid_transactions: Array<{ id: string; message?: string }>;
}

function statusLines(data: Status[]): string {
  return data
    .map((s) => {
      const why = s.invalid_transactions.map((t) => t.message ?? t.id).join('; ');
      return `${s.id} ${s.status}${why ? ` ${why}` : ''}`;
    })
    .join('\n');
}

async function statuses(url: string, ids: string[], wait: number, timeoutMs: number): Promise<Status[]> {
  const a = await call(
    `${url}/batch_statuses${wait > 0 ? `?wait=${wait}` : ''}`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ids) },
    LEDGER,
    timeoutMs + wait * 1000,
  );
  const data = (a.json as { data?: Status[] } | undefined)?.data;
  if (!a.ok || !Array.isArray(data)) throw new CliError(`the ledger gateway answered ${a.status}: ${answerMessage(a)}`);
  return data;
}

/** 0 when every batch committed, 3 when one is still pending, else 1. */
function outcome(data: Status[]): number {
  if (data.every((s) => s.status === 'COMMITTED')) return 0;
  return data.some((s) => s.status === 'INVALID' || s.status === 'UNKNOWN') ? 1 : 3;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, [...SERVER_OPTIONS, ...BUILD_OPTIONS]);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const out = new Output(args);
  const [verb, ...rest] = args.positional;
  if (verb === 'build') {
    const misplaced = SERVER_OPTIONS.find((o) => args.options.has(o));
    if (misplaced) throw new UsageError(`--${misplaced} is not an option of batch build (it sends nothing)`);
    return (await import('./batch-build.js')).build(args, out, rest[0], rest.slice(1));
  }
  if (verb !== 'submit' && verb !== 'status' && verb !== 'list')
    throw new UsageError(verb ? `unknown subcommand ${verb} (submit, status, list, build)` : 'missing subcommand (submit, status, list, build)');
  const misplaced = BUILD_OPTIONS.find((o) => args.options.has(o));
  if (misplaced) throw new UsageError(`--${misplaced} is an option of batch build`);
  const url = ledgerUrl(args.options.get('url'));
  const timeoutMs = timeoutOption(args);
  if (verb === 'submit') return submit(args, out, url, rest, timeoutMs);
  if (verb === 'status') {
    if (rest.length === 0) throw new UsageError('status needs at least one batch id');
    const bad = rest.find((id) => !isHexId(id));
    if (bad) throw new UsageError(`not a batch id (128 hex digits): ${bad}`);
    const data = await statuses(url, rest, seconds(args.options.get('wait'), 'wait', 0), timeoutMs);
    out.result(data, statusLines(data));
    return 0;
  }
  if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
  const limit = args.options.get('limit') ?? '20';
  if (!/^[1-9]\d{0,3}$/.test(limit)) throw new UsageError(`--limit takes a number from 1 to 9999, got "${limit}"`);
  const page: {
    data: Array<{ header_signature: string; header: { signer_public_key: string }; transactions: Array<{ header: { family_name: string } }> }>;
  } = await getJson(`${url}/batches?limit=${limit}`, LEDGER, timeoutMs);
  const rows = page.data.map((b) => ({
    id: b.header_signature,
    signer: b.header.signer_public_key,
    transactions: b.transactions.length,
    families: [...new Set(b.transactions.map((t) => t.header.family_name))],
  }));
  out.result(rows, rows.map((b) => `${b.id} ${b.transactions} txn ${b.families.join(',')} signer ${b.signer.slice(0, 16)}…`).join('\n'));
  return 0;
}

/** `batch submit FILE…`: every file read before the first is sent (a missing one is a usage error, nothing sent). */
async function submit(args: Args, out: Output, url: string, files: string[], timeoutMs: number): Promise<number> {
  if (files.length === 0) throw new UsageError('submit needs at least one BatchList file (or - for stdin)');
  const wait = seconds(args.options.get('wait'), 'wait', 10);
  const bodies = files.map((file) => readInput(file, 'submit'));
  const ids: string[] = [];
  for (const [i, body] of bodies.entries()) {
    const a = await call(
      `${url}/batches`,
      { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(body) },
      LEDGER,
      timeoutMs,
    );
    const link = (a.json as { link?: unknown } | undefined)?.link;
    if (!a.ok || typeof link !== 'string') throw new CliError(`${files[i]}: batch refused: ${answerMessage(a)}`);
    ids.push(...(new URL(link).searchParams.get('id') ?? '').split(',').filter(Boolean));
  }
  const data = await statuses(url, ids, wait, timeoutMs);
  out.result(data, statusLines(data));
  return outcome(data);
}

if (isMain(import.meta.url)) void runCommand('cairn batch', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv));
