/**
 * A small intkey client (`cairn intkey …`, `npm run -s intkey -- …`): `set foo 42` signs a
 * batch with a client key (created once at <data dir>/keys/client.priv, or --key <file>),
 * posts it to the ledger gateway, waits for the commit and prints the status; `show foo`
 * reads a value back, `list` every intkey value in state. The gateway is --url, else
 * CAIRN_LEDGER_URL, else the node's own CAIRN_LEDGER_BIND, else http://127.0.0.1:8008.
 *
 * Exit status: 0 committed (or value read), 1 invalid / rejected / unreachable,
 * 2 usage error, 3 still pending after the wait.
 */
import { join } from 'node:path';
import { buildBatch, buildBatchList, buildTransaction } from '../ledger/build.js';
import { INTKEY_PREFIX, intkeyAddress, intkeyPayload } from '../families/intkey.js';
import { decode } from '../codec/cbor.js';
import {
  answerMessage,
  call,
  CliError,
  getJson,
  isMain,
  jsonRequested,
  keyFileOrNew,
  LEDGER,
  ledgerUrl,
  Output,
  parseOrUsage,
  runCommand,
  seconds,
  timeoutOption,
  UsageError,
} from './args.js';

export const USAGE = `usage: cairn intkey set|inc|dec <name> <value> [options]
       cairn intkey show <name> [options]      (also: get)
       cairn intkey list [options]
Signs an intkey transaction, submits it to the ledger gateway and waits for its commit, or
reads intkey values from state. A name has at most 20 characters; a value is 0 to 4294967295.
options:
  --url URL          ledger gateway (default: CAIRN_LEDGER_URL, else http://<CAIRN_LEDGER_BIND>, else http://127.0.0.1:8008)
  --key FILE         client private key, created when missing (default <data dir>/keys/client.priv)
  --data-dir DIR     data directory for the default key (default CAIRN_DATA_DIR or ./data)
  --wait SECONDS     how long to wait for the commit (default 10)
  --timeout SECONDS  how long one call to the gateway may take, beyond --wait (default 30)
  --json             print JSON instead of text; --quiet: nothing but the result
exit status: 0 committed (show, list: read), 1 invalid, refused or failed, 2 usage or input error, 3 still pending
`;

interface StatusBody {
  data?: Array<{ id: string; status: string; invalid_transactions?: Array<{ id: string; message?: string }> }>;
}

/** The intkey names and values stored at one state entry (a CBOR map; names may share an address). */
function entries(data: string): Array<[string, number]> {
  const m = decode(Buffer.from(data, 'base64'));
  return m instanceof Map ? [...(m as Map<string, number>).entries()] : [];
}

const VERBS = ['set', 'inc', 'dec', 'get', 'show', 'list'];

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, ['url', 'key', 'data-dir', 'wait', 'timeout']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const out = new Output(args);
  const [verb, name, value, extra] = args.positional;
  if (!verb) throw new UsageError('missing verb (set, inc, dec, show, list)');
  if (!VERBS.includes(verb)) throw new UsageError(`unknown verb ${verb} (set, inc, dec, show, list)`);
  const url = ledgerUrl(args.options.get('url'));
  const wait = seconds(args.options.get('wait'), 'wait', 10);
  const timeoutMs = timeoutOption(args);

  if (verb === 'list') {
    if (name !== undefined) throw new UsageError(`unexpected argument ${name}`);
    const found: Array<{ name: string; value: number }> = [];
    let next: string | undefined = `${url}/state?address=${INTKEY_PREFIX}&limit=1000`;
    while (next) {
      const page: { data: Array<{ data: string }>; paging?: { next_position?: string } } = await getJson(next, LEDGER, timeoutMs);
      for (const e of page.data) for (const [n, v] of entries(e.data)) found.push({ name: n, value: v });
      const pos = page.paging?.next_position;
      next = pos ? `${url}/state?address=${INTKEY_PREFIX}&limit=1000&start=${encodeURIComponent(pos)}` : undefined;
    }
    found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    out.result(found, found.map((e) => `${e.name}: ${e.value}`).join('\n'));
    return 0;
  }
  if (!name) throw new UsageError('missing name');
  if (name.length > 20) throw new UsageError(`name "${name}" has ${name.length} characters; intkey takes at most 20`);
  if (verb === 'get' || verb === 'show') {
    if (value !== undefined) throw new UsageError(`unexpected argument ${value}`);
    const a = await call(`${url}/state/${intkeyAddress(name)}`, {}, LEDGER, timeoutMs);
    const data = (a.json as { data?: unknown } | undefined)?.data;
    const hit = a.ok && typeof data === 'string' ? entries(data).find(([n]) => n === name) : undefined;
    if (!hit) throw new CliError(`${name}: ${a.ok || a.status === 404 ? 'not set' : `the ledger gateway answered ${a.status}: ${answerMessage(a)}`}`);
    out.result({ name, value: hit[1] }, `${name}: ${hit[1]}`);
    return 0;
  }
  if (value === undefined || !/^\d+$/.test(value))
    throw new UsageError(`${verb} needs a whole number value, got ${value === undefined ? 'none' : `"${value}"`}`);
  if (extra !== undefined) throw new UsageError(`unexpected argument ${extra}`);
  if (Number(value) > 2 ** 32 - 1) throw new UsageError(`value ${value} is over intkey's limit (4294967295)`);
  const keyOpt = args.options.get('key');
  const dataDir = args.options.get('data-dir') ?? (process.env.CAIRN_DATA_DIR || './data');
  const signer = keyOpt ? keyFileOrNew(keyOpt, '--key') : keyFileOrNew(join(dataDir, 'keys', 'client.priv'), '--data-dir (its keys/client.priv)');
  const address = intkeyAddress(name);
  const txn = buildTransaction(signer, {
    familyName: 'intkey',
    familyVersion: '1.0',
    inputs: [address],
    outputs: [address],
    payload: intkeyPayload(verb, name, Number(value)),
  });
  const batch = buildBatch(signer, [txn]);
  const sub = await call(
    `${url}/batches`,
    { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from(buildBatchList([batch])) },
    LEDGER,
    timeoutMs,
  );
  if (!sub.ok) throw new CliError(`batch refused: the ledger gateway answered ${sub.status}: ${answerMessage(sub)}`);
  // The link names the host the node saw; ask the URL this tool was given.
  const body: StatusBody = await getJson(`${url}/batch_statuses?id=${batch.id}&wait=${wait}`, LEDGER, timeoutMs + wait * 1000);
  const st = body.data?.[0];
  const status = st?.status ?? 'UNKNOWN';
  const why = st?.invalid_transactions?.map((t) => t.message ?? t.id).join('; ');
  const pending = status === 'PENDING' ? ` after ${wait} s (--wait SECONDS waits longer)` : '';
  out.result(
    { verb, name, value: Number(value), batch_id: batch.id, status, invalid_transactions: st?.invalid_transactions ?? [] },
    `${verb} ${name} ${value}: batch ${batch.id} ${status}${why ? `: ${why}` : ''}${pending}`,
  );
  return status === 'COMMITTED' ? 0 : status === 'PENDING' ? 3 : 1;
}

if (isMain(import.meta.url)) void runCommand('cairn intkey', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv));
