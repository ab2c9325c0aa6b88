/**
 * A small intkey client: `npm run -s intkey -- set foo 42` signs a batch with a client key
 * (created once at <data dir>/keys/client.priv, or --key <file>), posts it to the ledger
 * gateway, waits for the commit and prints the status. `npm run -s intkey -- get foo`
 * reads the value back. The gateway is --url, else CAIRN_LEDGER_URL, else the node's own
 * CAIRN_LEDGER_BIND, else http://127.0.0.1:8008.
 *
 * Exit status: 0 committed (or value read), 1 invalid / rejected / unreachable,
 * 2 usage error, 3 still pending after the wait.
 */
import { join } from 'node:path';
import { loadOrCreateKey } from '../store/keys.js';
import { buildBatch, buildBatchList, buildTransaction } from '../ledger/build.js';
import { intkeyAddress, intkeyPayload } from '../families/intkey.js';
import { decode } from '../codec/cbor.js';
import { fetchOrExplain, ledgerUrl, parseCliArgs, type Args } from './args.js';

const USAGE = `usage: intkey set|inc|dec <name> <value> [options]
       intkey get <name> [options]
options:
  --url URL        ledger gateway (default: CAIRN_LEDGER_URL, else http://<CAIRN_LEDGER_BIND>, else http://127.0.0.1:8008)
  --key FILE       client private key, created when missing (default <data dir>/keys/client.priv)
  --data-dir DIR   data directory for the default key (default CAIRN_DATA_DIR or ./data)
  --wait SECONDS   how long to wait for the commit (default 10)
exit status: 0 committed, 1 invalid or failed, 2 usage, 3 still pending
`;

class UsageError extends Error {}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parseCliArgs(process.argv.slice(2), ['url', 'key', 'data-dir', 'wait']);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [verb, name, value] = args.positional;
  if (!verb || !['set', 'inc', 'dec', 'get'].includes(verb)) throw new UsageError(verb ? `unknown verb ${verb}` : 'missing verb');
  if (!name) throw new UsageError('missing name');
  if (verb !== 'get' && (value === undefined || !/^\d+$/.test(value))) throw new UsageError('missing or non-integer value');
  const url = ledgerUrl(args.options.get('url'));
  const wait = args.options.get('wait') ?? '10';
  if (!/^\d+$/.test(wait)) throw new UsageError('--wait takes whole seconds');

  if (verb === 'get') {
    const r = await fetchOrExplain(`${url}/state/${intkeyAddress(name)}`);
    const body = (await r.json()) as { data?: string; error?: { message: string } };
    if (!body.data) throw new Error(`${name}: ${body.error?.message ?? `HTTP ${r.status}`}`);
    const m = decode(Buffer.from(body.data, 'base64')) as Map<string, number>;
    process.stdout.write(`${name}: ${m.get(name)}\n`);
    return 0;
  }
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
  const st = await fetchOrExplain(`${url}/batch_statuses?id=${batch.id}&wait=${wait}`);
  const body = (await st.json()) as { data?: Array<{ status: string; invalid_transactions?: Array<{ message: string }> }> };
  process.stdout.write(`${JSON.stringify(body)}\n`);
  const status = body.data?.[0]?.status;
  if (status === 'COMMITTED') return 0;
  if (status === 'PENDING') {
    process.stderr.write(`intkey: batch still pending after ${wait} s\n`);
    return 3;
  }
  const why = body.data?.[0]?.invalid_transactions?.map((t) => t.message).join('; ');
  process.stderr.write(`intkey: batch ${status ?? 'not found'}${why ? `: ${why}` : ''}\n`);
  return 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`intkey: ${err.message}\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`intkey: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
