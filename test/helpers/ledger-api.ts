/** Helpers for the ledger gateway tests: raw JSON fetches, paging walks, error checks, the upstream JS SDK. */
import { createRequire } from 'node:module';
import { request } from 'node:http';
import { createHash } from 'node:crypto';
import { encode } from '../../src/codec/cbor.js';

export interface Res {
  status: number;
  text: string;
  json: any;
  headers: Headers;
}

export async function get(url: string, headers: Record<string, string> = {}): Promise<Res> {
  const r = await fetch(url, { headers });
  const text = await r.text();
  return { status: r.status, text, json: JSON.parse(text), headers: r.headers };
}

/** A GET through node:http, which (unlike fetch) lets a test set the Host header. */
export function getWithHost(url: string, host: string): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, json: JSON.parse(text), headers: new Headers() }));
    });
    req.on('error', reject);
    req.end();
  });
}

export async function post(url: string, body: string | Uint8Array, contentType: string): Promise<Res> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body: typeof body === 'string' ? body : Buffer.from(body) });
  const text = await r.text();
  return { status: r.status, text, json: JSON.parse(text), headers: r.headers };
}

/** True when every object in `v` has its keys in alphabetical order. */
export function keysSorted(v: unknown): boolean {
  if (Array.isArray(v)) return v.every(keysSorted);
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    return keys.every((k, i) => i === 0 || keys[i - 1]! < k) && Object.values(v).every(keysSorted);
  }
  return true;
}

/** Follows `paging.next` from `url`; returns every page. */
export async function walkPages(url: string, max = 1000): Promise<Res[]> {
  const pages: Res[] = [];
  let next: string | undefined = url;
  while (next && pages.length < max) {
    const r = await get(next);
    if (r.status !== 200) throw new Error(`${next}: ${r.status} ${r.text}`);
    pages.push(r);
    next = r.json.paging.next;
  }
  return pages;
}

export const ids = (items: Array<{ header_signature: string }>): string[] => items.map((i) => i.header_signature);

/** The upstream JavaScript SDK (sawtooth-sdk on npm), loaded without its zeromq-bound root module. */
const require = createRequire(import.meta.url);
export const sdkSigning = require('sawtooth-sdk/signing');
export const sdkProtobuf = require('sawtooth-sdk/protobuf');

/** A signer made as the SDK documentation shows: createContext('secp256k1') + CryptoFactory. */
export function sdkSigner(): any {
  const context = sdkSigning.createContext('secp256k1');
  return new sdkSigning.CryptoFactory(context).newSigner(context.newRandomPrivateKey());
}

export function intkeyAddressOf(name: string): string {
  const h = (s: string): string => createHash('sha512').update(s).digest('hex');
  return h('intkey').slice(0, 6) + h(name).slice(-64);
}

/**
 * One intkey batch built step by step as the SDK's "Building and Submitting Transactions"
 * guide does: CBOR payload, TransactionHeader.encode, signer.sign, Transaction.create,
 * BatchHeader.encode, Batch.create. Returns the batch message and the ids.
 */
export function sdkIntkeyBatch(signer: any, ops: Array<[string, string, number]>): { batch: any; id: string; txnIds: string[] } {
  const protobuf = sdkProtobuf;
  // No nonce, as in the guide: the payloads (verb, name, value) keep the ids distinct.
  const transactions = ops.map(([verb, name, value]) => {
    const payloadBytes = encode({ Verb: verb, Name: name, Value: value });
    const address = intkeyAddressOf(name);
    const transactionHeaderBytes = protobuf.TransactionHeader.encode({
      familyName: 'intkey',
      familyVersion: '1.0',
      inputs: [address],
      outputs: [address],
      signerPublicKey: signer.getPublicKey().asHex(),
      batcherPublicKey: signer.getPublicKey().asHex(),
      dependencies: [],
      payloadSha512: createHash('sha512').update(payloadBytes).digest('hex'),
    }).finish();
    const signature = signer.sign(transactionHeaderBytes);
    return protobuf.Transaction.create({ header: transactionHeaderBytes, headerSignature: signature, payload: payloadBytes });
  });
  const batchHeaderBytes = protobuf.BatchHeader.encode({
    signerPublicKey: signer.getPublicKey().asHex(),
    transactionIds: transactions.map((txn: any) => txn.headerSignature),
  }).finish();
  const batchSignature = signer.sign(batchHeaderBytes);
  const batch = protobuf.Batch.create({ header: batchHeaderBytes, headerSignature: batchSignature, transactions });
  return { batch, id: batchSignature, txnIds: transactions.map((txn: any) => txn.headerSignature) };
}

export function sdkBatchList(batches: any[]): Uint8Array {
  return sdkProtobuf.BatchList.encode({ batches }).finish();
}

/**
 * The header bytes of a block as returned by the REST API, re-encoded with the SDK's
 * BlockHeader. Proto3 serialisation leaves out a zero block_num (genesis), as upstream does.
 */
export function sdkBlockHeaderBytes(h: any): Uint8Array {
  return sdkProtobuf.BlockHeader.encode({
    blockNum: Number(h.block_num) || undefined,
    previousBlockId: h.previous_block_id,
    signerPublicKey: h.signer_public_key,
    batchIds: h.batch_ids,
    consensus: Buffer.from(h.consensus, 'base64'),
    stateRootHash: h.state_root_hash,
  }).finish();
}
