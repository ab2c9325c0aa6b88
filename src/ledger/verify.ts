/**
 * Structural and cryptographic checks of a submitted BatchList, as the validator's
 * submit pipeline does them: decode, batch and transaction signatures over the exact
 * header bytes, payload hashes, batcher keys, id lists, dependencies and known families.
 * Pure and synchronous; runs in the piscina workers, never on the HTTP thread.
 */
import protobuf from 'protobufjs';
import {
  Batch,
  BatchHeader,
  Transaction,
  TransactionHeader,
  decode,
  type BatchHeaderMsg,
  type BatchMsg,
  type TransactionHeaderMsg,
  type TransactionMsg,
} from '../proto/index.js';
import { sha512Hex, verify } from '../crypto/secp256k1.js';
import { isHexId } from '../codec/hex.js';
import { findFamily } from '../families/index.js';
import type { FamilyLookup } from './catalog.js';

export interface VerifiedBatch {
  id: string;
  signer: string;
  /** Byte range of the serialized Batch inside the submitted body. */
  start: number;
  end: number;
  txnIds: string[];
}

export type VerifyResult =
  | { ok: true; batches: VerifiedBatch[] }
  | { ok: false; code: 'EMPTY' | 'UNDECODABLE' | 'INVALID' | 'QUEUE_FULL'; message: string };

const KEY_RE = /^0[23][0-9a-f]{64}$/;

class Reject extends Error {}

/** Splits a BatchList into the byte ranges of its batches without copying. */
function batchRanges(body: Uint8Array): Array<[number, number]> {
  const r = protobuf.Reader.create(body);
  const out: Array<[number, number]> = [];
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 2) {
      const len = r.uint32();
      const start = r.pos;
      r.skip(len);
      out.push([start, start + len]);
    } else {
      r.skipType(tag & 7);
    }
  }
  return out;
}

function describeUnwrapped(body: Uint8Array): string | null {
  try {
    const t = decode(Transaction, body);
    if (isHexId(t.headerSignature) && t.header.length > 0) {
      const h = decode(TransactionHeader, t.header);
      if (h.familyName && isHexId(h.payloadSha512)) {
        return 'The body is a single Transaction: a transaction must be inside a Batch, and the batch inside a BatchList';
      }
    }
  } catch {
    // not a transaction
  }
  try {
    const b = decode(Batch, body);
    if (isHexId(b.headerSignature) && b.header.length > 0) {
      const h = decode(BatchHeader, b.header);
      if (KEY_RE.test(h.signerPublicKey)) return 'The body is a single Batch: batches must be inside a BatchList';
    }
  } catch {
    // not a batch
  }
  return null;
}

function checkTransaction(t: TransactionMsg, expectedId: string | undefined, batcher: string, bi: number, ti: number, known: FamilyLookup): string {
  const where = `batch ${bi} transaction ${ti}`;
  if (!isHexId(t.headerSignature)) throw new Reject(`${where}: header_signature is not 128 hex characters`);
  if (t.headerSignature !== expectedId) {
    throw new Reject(`${where}: id ${t.headerSignature} does not match transaction_ids[${ti}] of the batch header`);
  }
  let h: TransactionHeaderMsg;
  try {
    h = decode(TransactionHeader, t.header);
  } catch {
    throw new Reject(`${where}: header is not a decodable TransactionHeader`);
  }
  if (h.batcherPublicKey !== batcher) {
    throw new Reject(`${where}: batcher_public_key does not match the batch signer`);
  }
  if (!KEY_RE.test(h.signerPublicKey)) throw new Reject(`${where}: signer_public_key is not a compressed public key`);
  if (sha512Hex(t.payload) !== h.payloadSha512) throw new Reject(`${where}: payload_sha512 does not match the payload`);
  if (h.dependencies.some((d) => d === '')) throw new Reject(`${where}: empty dependency`);
  if (!known(h.familyName, h.familyVersion)) {
    throw new Reject(`${where}: unknown transaction family ${JSON.stringify(h.familyName)} version ${JSON.stringify(h.familyVersion)}`);
  }
  if (!verify(t.headerSignature, t.header, h.signerPublicKey)) {
    throw new Reject(`${where}: invalid signature`);
  }
  return t.headerSignature;
}

function checkBatch(b: BatchMsg, start: number, end: number, bi: number, known: FamilyLookup): VerifiedBatch {
  if (!isHexId(b.headerSignature)) throw new Reject(`batch ${bi}: header_signature is not 128 hex characters`);
  let h: BatchHeaderMsg;
  try {
    h = decode(BatchHeader, b.header);
  } catch {
    throw new Reject(`batch ${bi}: header is not a decodable BatchHeader`);
  }
  if (!KEY_RE.test(h.signerPublicKey)) throw new Reject(`batch ${bi}: signer_public_key is not a compressed public key`);
  if (!verify(b.headerSignature, b.header, h.signerPublicKey)) throw new Reject(`batch ${bi}: invalid signature`);
  if (h.transactionIds.length !== b.transactions.length) {
    throw new Reject(
      `batch ${bi}: header lists ${h.transactionIds.length} transaction ids but the batch holds ${b.transactions.length} transactions`,
    );
  }
  if (new Set(h.transactionIds).size !== h.transactionIds.length) throw new Reject(`batch ${bi}: duplicate transaction ids`);
  for (const [ti, t] of b.transactions.entries()) checkTransaction(t, h.transactionIds[ti], h.signerPublicKey, bi, ti, known);
  return { id: b.headerSignature, signer: h.signerPublicKey, start, end, txnIds: h.transactionIds };
}

/**
 * Verifies one submitted body. With `nodeKeyOnly`, the list is accepted only if one of
 * its batches is signed by that key (the back-pressure exemption); otherwise QUEUE_FULL.
 * `known` tells the families the ledger accepts (by default every family the node carries).
 */
export function verifyBatchList(body: Uint8Array, nodeKeyOnly?: string, known: FamilyLookup = findFamily): VerifyResult {
  if (body.length === 0) return { ok: false, code: 'EMPTY', message: 'No batches were submitted: the body is empty' };
  let ranges: Array<[number, number]>;
  let decoded: BatchMsg[];
  try {
    ranges = batchRanges(body);
    decoded = ranges.map(([s, e]) => decode(Batch, body.subarray(s, e)));
  } catch {
    const hint = describeUnwrapped(body);
    if (hint) return { ok: false, code: 'INVALID', message: hint };
    return { ok: false, code: 'UNDECODABLE', message: 'The body is not a protobuf-encoded BatchList' };
  }
  if (ranges.length === 0) return { ok: false, code: 'EMPTY', message: 'The BatchList holds no batches' };
  try {
    const batches = ranges.map(([s, e], i) => checkBatch(decoded[i]!, s, e, i, known));
    const ids = new Set(batches.map((b) => b.id));
    if (ids.size !== batches.length) throw new Reject('duplicate batch ids in one BatchList');
    if (nodeKeyOnly !== undefined && !batches.some((b) => b.signer === nodeKeyOnly)) {
      return { ok: false, code: 'QUEUE_FULL', message: 'queue full' };
    }
    return { ok: true, batches };
  } catch (err) {
    if (!(err instanceof Reject)) throw err;
    const hint = describeUnwrapped(body);
    return { ok: false, code: 'INVALID', message: hint ?? err.message };
  }
}
