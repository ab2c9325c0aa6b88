/**
 * A small intkey client: `npm run -s intkey -- set foo 42` signs a batch with a client key
 * (created once at ./data/keys/client.priv, or --key <file>), posts it to the ledger
 * gateway (--url, default http://127.0.0.1:8008), waits for the commit and prints the status.
 * `npm run -s intkey -- get foo` reads the value back.
 */
import { join } from 'node:path';
import { loadOrCreateKey } from '../store/keys.js';
import { buildBatch, buildBatchList, buildTransaction } from '../ledger/build.js';
import { intkeyAddress, intkeyPayload } from '../families/intkey.js';
import { decode } from '../codec/cbor.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}

async function main(): Promise<void> {
  const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
  const [verb, name, value] = positional;
  const url = arg('url', 'http://127.0.0.1:8008');
  if (!verb || !name || (verb !== 'get' && value === undefined)) {
    process.stderr.write('usage: intkey set|inc|dec <name> <value> | intkey get <name> [--url URL] [--key FILE]\n');
    process.exit(2);
  }
  if (verb === 'get') {
    const r = await fetch(`${url}/state/${intkeyAddress(name)}`);
    const body = (await r.json()) as { data?: string; error?: { message: string } };
    if (!body.data) throw new Error(body.error?.message ?? `HTTP ${r.status}`);
    const m = decode(Buffer.from(body.data, 'base64')) as Map<string, number>;
    process.stdout.write(`${name}: ${m.get(name)}\n`);
    return;
  }
  const signer = loadOrCreateKey(arg('key', join(process.env.CAIRN_DATA_DIR ?? './data', 'keys', 'client.priv')));
  const address = intkeyAddress(name);
  const txn = buildTransaction(signer, {
    familyName: 'intkey',
    familyVersion: '1.0',
    inputs: [address],
    outputs: [address],
    payload: intkeyPayload(verb, name, Number(value)),
  });
  const batch = buildBatch(signer, [txn]);
  const r = await fetch(`${url}/batches`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: Buffer.from(buildBatchList([batch])),
  });
  const sub = (await r.json()) as { link?: string; error?: { message: string } };
  if (!sub.link) throw new Error(sub.error?.message ?? `HTTP ${r.status}`);
  const st = await fetch(`${sub.link}&wait=10`);
  process.stdout.write(`${JSON.stringify(await st.json())}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
