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
import { readFileSync } from 'node:fs';
import { isHexId } from '../codec/hex.js';
import { fetchOrExplain, getJson, isMain, ledgerUrl, parseOrUsage, print, runCommand, seconds, UsageError } from './args.js';

export const USAGE = `usage: cairn batch submit <file|-> ... [--wait SECONDS] [options]   post BatchList files, wait for their statuses
       cairn batch status <batch id> ... [--wait SECONDS] [options]   statuses of batches
       cairn batch list [--limit N] [options]                        the latest batches
       cairn batch build intkey VERB NAME VALUE [VERB NAME VALUE ...] --out FILE [build options]
       cairn batch build raw --family NAME --version V [--input ADDR ...] [--output ADDR ...]
                             (--payload HEX | --payload-file FILE) ... --out FILE [build options]
Builds signed BatchList files and submits, follows and lists batches of any family on the ledger gateway.
options:
  --url URL        ledger gateway (default: CAIRN_LEDGER_URL, else http://<CAIRN_LEDGER_BIND>, else http://127.0.0.1:8008)
  --wait SECONDS   how long to wait for the batches to settle (submit default 10, status default 0)
  --json           print JSON instead of text
build options (offline: nothing is sent; submit the file with cairn batch submit FILE):
  --out FILE       the BatchList file to write
  --key FILE       signing key (default <data dir>/keys/client.priv, created when missing)
  --data-dir DIR   data directory for the default key (default CAIRN_DATA_DIR or ./data)
  --per-batch N    transactions per batch (default 1: one batch per transaction, many per file)
  --repeat N       write the transactions N times, each with its own nonce (default 1)
  --input/--output ADDR   state addresses or prefixes the raw transactions read/write (repeatable, or comma-separated)
  --payload HEX, --payload-file FILE   one raw transaction per payload (repeatable)
exit status: 0 committed (list, status: answered; build: written), 1 invalid or failed, 2 usage, 3 still pending
`;

/** The options of `batch build` (batch-build.ts, loaded only for that command). */
const BUILD_OPTIONS = ['out', 'key', 'data-dir', 'per-batch', 'repeat', 'family', 'version', 'input', 'output', 'payload', 'payload-file'];

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

async function statuses(url: string, ids: string[], wait: number): Promise<Status[]> {
  const r = await fetchOrExplain(`${url}/batch_statuses${wait > 0 ? `?wait=${wait}` : ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ids),
  });
  const body = (await r.json()) as { data?: Status[]; error?: { message?: string } };
  if (!r.ok || !body.data) throw new Error(body.error?.message ?? `HTTP ${r.status}`);
  return body.data;
}

/** 0 when every batch committed, 3 when one is still pending, else 1. */
function outcome(data: Status[]): number {
  if (data.every((s) => s.status === 'COMMITTED')) return 0;
  return data.some((s) => s.status === 'INVALID' || s.status === 'UNKNOWN') ? 1 : 3;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, ['url', 'wait', 'limit', ...BUILD_OPTIONS], ['json']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const json = args.flags.has('json');
  const [verb, ...rest] = args.positional;
  if (verb === 'build') return (await import('./batch-build.js')).build(args, rest[0], rest.slice(1));
  const misplaced = BUILD_OPTIONS.find((o) => args.options.has(o));
  if (misplaced) throw new UsageError(`--${misplaced} is an option of batch build`);
  const url = ledgerUrl(args.options.get('url'));
  switch (verb) {
    case 'submit': {
      if (rest.length === 0) throw new UsageError('submit needs at least one BatchList file (or - for stdin)');
      const wait = seconds(args.options.get('wait'), 'wait', 10);
      const ids: string[] = [];
      for (const file of rest) {
        let body: Buffer;
        try {
          body = readFileSync(file === '-' ? 0 : file);
        } catch (err) {
          throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
        }
        const r = await fetchOrExplain(`${url}/batches`, {
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream' },
          body: new Uint8Array(body),
        });
        const sub = (await r.json()) as { link?: string; error?: { message?: string } };
        if (!sub.link) throw new Error(`${file}: batch refused: ${sub.error?.message ?? `HTTP ${r.status}`}`);
        ids.push(...(new URL(sub.link).searchParams.get('id') ?? '').split(',').filter(Boolean));
      }
      const data = await statuses(url, ids, wait);
      print(json, data, statusLines(data));
      return outcome(data);
    }
    case 'status': {
      if (rest.length === 0) throw new UsageError('status needs at least one batch id');
      const bad = rest.find((id) => !isHexId(id));
      if (bad) throw new UsageError(`not a batch id (128 hex digits): ${bad}`);
      const data = await statuses(url, rest, seconds(args.options.get('wait'), 'wait', 0));
      print(json, data, statusLines(data));
      return 0;
    }
    case 'list': {
      if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
      const limit = args.options.get('limit') ?? '20';
      if (!/^[1-9]\d{0,3}$/.test(limit)) throw new UsageError(`--limit takes a number from 1 to 9999, got "${limit}"`);
      const page: {
        data: Array<{ header_signature: string; header: { signer_public_key: string }; transactions: Array<{ header: { family_name: string } }> }>;
      } = await getJson(`${url}/batches?limit=${limit}`);
      const rows = page.data.map((b) => ({
        id: b.header_signature,
        signer: b.header.signer_public_key,
        transactions: b.transactions.length,
        families: [...new Set(b.transactions.map((t) => t.header.family_name))],
      }));
      print(json, rows, rows.map((b) => `${b.id} ${b.transactions} txn ${b.families.join(',')} signer ${b.signer.slice(0, 16)}…`).join('\n'));
      return 0;
    }
    default:
      throw new UsageError(verb ? `unknown command batch ${verb}` : 'missing command (submit, status, list, build)');
  }
}

if (isMain(import.meta.url)) void runCommand('cairn batch', USAGE, () => run(process.argv.slice(2)), process.argv.includes('--json'));
