/** Builders for signed intkey and settings batches, as a Sawtooth client makes them. */
import { Signer, randomPrivateKey } from '../../src/crypto/secp256k1.js';
import { buildBatch, buildBatchList, buildTransaction, type BuiltBatch, type TxnSpec } from '../../src/ledger/build.js';
import { intkeyAddress, intkeyPayload } from '../../src/families/intkey.js';

export { Signer, buildBatch, buildBatchList, buildTransaction };

export function newSigner(): Signer {
  return new Signer(randomPrivateKey());
}

export function intkeySpec(verb: string, name: string, value: number, extra: Partial<TxnSpec> = {}): TxnSpec {
  const address = intkeyAddress(name);
  return {
    familyName: 'intkey',
    familyVersion: '1.0',
    inputs: [address],
    outputs: [address],
    payload: intkeyPayload(verb, name, value),
    ...extra,
  };
}

/** One batch holding one intkey transaction per op. */
export function intkeyBatch(signer: Signer, ops: Array<[string, string, number]>): BuiltBatch {
  return buildBatch(
    signer,
    ops.map(([v, n, x]) => buildTransaction(signer, intkeySpec(v, n, x))),
  );
}

export function batchList(...batches: BuiltBatch[]): Buffer {
  return Buffer.from(buildBatchList(batches));
}

export async function postBatches(url: string, body: Uint8Array, contentType = 'application/octet-stream'): Promise<{ status: number; json: any }> {
  const r = await fetch(`${url}/batches`, { method: 'POST', headers: { 'content-type': contentType }, body: Buffer.from(body) });
  return { status: r.status, json: await r.json() };
}

export async function getJson(url: string): Promise<{ status: number; json: any }> {
  const r = await fetch(url);
  return { status: r.status, json: await r.json() };
}

export async function waitCommitted(ledgerUrl: string, ids: string[], seconds = 10): Promise<any[]> {
  const r = await getJson(`${ledgerUrl}/batch_statuses?id=${ids.join(',')}&wait=${seconds}`);
  return r.json.data;
}
