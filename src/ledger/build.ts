/**
 * Builds signed transactions, batches and batch lists the way the Sawtooth SDKs do, and
 * the serialized form of a block. Used for genesis, for the node's own submissions (the
 * data API), by the block builder and by tests and benches.
 */
import { randomBytes } from 'node:crypto';
import protobuf from 'protobufjs';
import { BatchHeader, TransactionHeader, encode } from '../proto/index.js';
import { sha512Hex, type Signer } from '../crypto/secp256k1.js';

export interface TxnSpec {
  familyName: string;
  familyVersion: string;
  inputs: string[];
  outputs: string[];
  payload: Uint8Array;
  dependencies?: string[];
  nonce?: string;
}

export interface BuiltTxn {
  id: string;
  /** Serialized Transaction. */
  bytes: Uint8Array;
}

export interface BuiltBatch {
  id: string;
  txnIds: string[];
  /** Serialized Batch. */
  bytes: Uint8Array;
}

export function buildTransaction(signer: Signer, spec: TxnSpec, batcher: Signer = signer): BuiltTxn {
  const header = encode(TransactionHeader, {
    batcherPublicKey: batcher.publicKey,
    dependencies: spec.dependencies ?? [],
    familyName: spec.familyName,
    familyVersion: spec.familyVersion,
    inputs: spec.inputs,
    nonce: spec.nonce ?? randomBytes(16).toString('hex'),
    outputs: spec.outputs,
    payloadSha512: sha512Hex(spec.payload),
    signerPublicKey: signer.publicKey,
  });
  const id = signer.sign(header);
  const w = protobuf.Writer.create();
  w.uint32(10).bytes(header).uint32(18).string(id).uint32(26).bytes(spec.payload);
  return { id, bytes: w.finish() };
}

/** Wraps already-built transactions (all batched by `signer`) into a signed batch. */
export function buildBatch(signer: Signer, txns: BuiltTxn[]): BuiltBatch {
  const txnIds = txns.map((t) => t.id);
  const header = encode(BatchHeader, { signerPublicKey: signer.publicKey, transactionIds: txnIds });
  const id = signer.sign(header);
  const w = protobuf.Writer.create();
  w.uint32(10).bytes(header).uint32(18).string(id);
  for (const t of txns) w.uint32(26).bytes(t.bytes);
  return { id, txnIds, bytes: w.finish() };
}

export function buildBatchList(batches: Array<{ bytes: Uint8Array }>): Uint8Array {
  const w = protobuf.Writer.create();
  for (const b of batches) w.uint32(10).bytes(b.bytes);
  return w.finish();
}

/**
 * A serialized Block from its header bytes, its id (the header signature) and its batches
 * already serialized: written field by field, so the batches are not decoded again.
 */
export function encodeBlock(headerBytes: Uint8Array, blockId: string, batches: Iterable<Uint8Array>): Uint8Array {
  const w = protobuf.Writer.create();
  w.uint32(10).bytes(headerBytes).uint32(18).string(blockId);
  for (const b of batches) w.uint32(26).bytes(b);
  return w.finish();
}
