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
import { loadOrCreateKey } from '../store/keys.js';
import { buildBatch, buildBatchList, buildTransaction } from '../ledger/build.js';
import { INTKEY_PREFIX, intkeyAddress, intkeyPayload } from '../families/intkey.js';
import { decode } from '../codec/cbor.js';
import { fetchOrExplain, getJson, isMain, ledgerUrl, parseOrUsage, print, runCommand, seconds, UsageError } from './args.js';

export const USAGE = `usage: cairn intkey set|inc|dec <name> <value> [options]
       cairn intkey show <name> [options]      (also: get)
       cairn intkey list [options]
Signs an intkey transaction, submits it to the ledger gateway and waits for its commit, or
reads intkey values from state. A name has at most 20 characters; a value is 0 to 4294967295.
options:
  --url URL        ledger gateway (default: CAIRN_LEDGER_URL, else http://<CAIRN_LEDGER_BIND>, else http://127.0.0.1:8008)
  --key FILE       client private key, created when missing (default <data dir>/keys/client.priv)
  --data-dir DIR   data directory for the default key (default CAIRN_DATA_DIR or ./data)
  --wait SECONDS   how long to wait for the commit (default 10)
  --json           print JSON instead of text
exit status: 0 committed, 1 invalid or failed, 2 usage, 3 still pending
`;

interface StatusBody {
  data?: Array<{ id: string; status: string; invalid_transactions?: Array<{ id: string; message?: string }> }>;
}

/** The intkey names and values stored at one state entry (a CBOR map; names may share an address). */
function entries(data: string): Array<[string, number]> {
  const m = decode(Buffer.from(data, 'base64'));
  return m instanceof Map ? [...(m as Map<string, number>).entries()] : [];
}

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, ['url', 'key', 'data-dir', 'wait'], ['json']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const json = args.flags.has('json');
  const [verb, name, value, extra] = args.positional;
  if (!verb) throw new UsageError('missing verb (set, inc, dec, show, list)');
  if (!['set', 'inc', 'dec', 'get', 'show', 'list'].includes(verb)) throw new UsageError(`unknown verb ${verb}`);
  const url = ledgerUrl(args.options.get('url'));
  const wait = seconds(args.options.get('wait'), 'wait', 10);

  if (verb === 'list') {
    if (name !== undefined) throw new UsageError(`unexpected argument ${name}`);
    const out: Array<{ name: string; value: number }> = [];
    let next: string | undefined = `${url}/state?address=${INTKEY_PREFIX}&limit=1000`;
    while (next) {
      const page: { data: Array<{ data: string }>; paging?: { next_position?: string } } = await getJson(next);
      for (const e of page.data) for (const [n, v] of entries(e.data)) out.push({ name: n, value: v });
      const pos = page.paging?.next_position;
      next = pos ? `${url}/state?address=${INTKEY_PREFIX}&limit=1000&start=${encodeURIComponent(pos)}` : undefined;
    }
    out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    print(json, out, out.map((e) => `${e.name}: ${e.value}`).join('\n'));
    return 0;
  }
  if (!name) throw new UsageError('missing name');
  if (verb === 'get' || verb === 'show') {
    if (value !== undefined) throw new UsageError(`unexpected argument ${value}`);
    const r = await fetchOrExplain(`${url}/state/${intkeyAddress(name)}`);
    const body = (await r.json()) as { data?: string; error?: { message: string } };
    const found = body.data ? entries(body.data).find(([n]) => n === name) : undefined;
    if (!found) throw new Error(`${name}: ${body.error?.message ?? (r.ok ? 'not set' : `HTTP ${r.status}`)}`);
    print(json, { name, value: found[1] }, `${name}: ${found[1]}`);
    return 0;
  }
  if (value === undefined || !/^\d+$/.test(value))
    throw new UsageError(`${verb} needs a whole number value, got ${value === undefined ? 'none' : `"${value}"`}`);
  if (extra !== undefined) throw new UsageError(`unexpected argument ${extra}`);
  if (name.length > 20) throw new UsageError(`name "${name}" has ${name.length} characters; intkey takes at most 20`);
  if (Number(value) > 2 ** 32 - 1) throw new UsageError(`value ${value} is over intkey's limit (4294967295)`);
  const dataDir = args.options.get('data-dir') ?? process.env.CAIRN_DATA_DIR ?? './data';
  const signer = loadOrCreateKey(args.options.get('key') ?? join(dataDir, 'keys', 'client.priv'));
  const address = intkeyAddress(name);
  const txn = buildTransaction(signer, {
    familyName: 'intkey',
    familyVersion: '1.0',
    inputs: [address],
    outputs: [address],
    payload: intkeyPayload(verb, name, Number(value)),
  });
  const batch = buildBatch(signer, [txn]);
  const r = await fetchOrExplain(`${url}/batches`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: Buffer.from(buildBatchList([batch])),
  });
  const sub = (await r.json()) as { link?: string; error?: { message: string } };
  if (!sub.link) throw new Error(`batch refused: ${sub.error?.message ?? `HTTP ${r.status}`}`);
  // The link names the host the node saw; ask the URL this tool was given.
  const body: StatusBody = await getJson(`${url}/batch_statuses?id=${batch.id}&wait=${wait}`);
  const st = body.data?.[0];
  const status = st?.status ?? 'UNKNOWN';
  const why = st?.invalid_transactions?.map((t) => t.message ?? t.id).join('; ');
  print(
    json,
    { verb, name, value: Number(value), batch_id: batch.id, status, invalid_transactions: st?.invalid_transactions ?? [] },
    `${verb} ${name} ${value}: batch ${batch.id} ${status}`,
  );
  if (status === 'COMMITTED') return 0;
  if (status === 'PENDING') {
    process.stderr.write(`intkey: batch still pending after ${wait} s\n`);
    return 3;
  }
  process.stderr.write(`intkey: batch ${status}${why ? `: ${why}` : ''}\n`);
  return 1;
}

if (isMain(import.meta.url)) void runCommand('cairn intkey', USAGE, () => run(process.argv.slice(2)), process.argv.includes('--json'));
