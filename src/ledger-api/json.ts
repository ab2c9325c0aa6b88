/**
 * Ledger gateway record shapes (Sawtooth 1.2 REST) built from the stored protobuf bytes:
 * snake_case keys in alphabetical order, headers inlined as objects, bytes as standard
 * base64, 64-bit block numbers as strings, enums by name.
 */
import {
  Block,
  BlockHeader,
  BatchHeader,
  TransactionHeader,
  TransactionReceipt,
  decode,
  type BatchMsg,
  type BlockHeaderMsg,
  type BlockMsg,
  type TransactionMsg,
} from '../proto/index.js';

/** Standard base64 (an absent bytes field decodes as an empty Buffer: src/proto/index.ts). */
export const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');

export interface TxnJson {
  header: {
    batcher_public_key: string;
    dependencies: string[];
    family_name: string;
    family_version: string;
    inputs: string[];
    nonce: string;
    outputs: string[];
    payload_sha512: string;
    signer_public_key: string;
  };
  header_signature: string;
  payload: string;
}

export interface BatchJson {
  header: { signer_public_key: string; transaction_ids: string[] };
  header_signature: string;
  trace: boolean;
  transactions: TxnJson[];
}

export interface BlockJson {
  batches: BatchJson[];
  header: {
    batch_ids: string[];
    block_num: string;
    consensus: string;
    previous_block_id: string;
    signer_public_key: string;
    state_root_hash: string;
  };
  header_signature: string;
}

export function txnJson(t: TransactionMsg): TxnJson {
  const h = decode(TransactionHeader, t.header);
  return {
    header: {
      batcher_public_key: h.batcherPublicKey,
      dependencies: h.dependencies,
      family_name: h.familyName,
      family_version: h.familyVersion,
      inputs: h.inputs,
      nonce: h.nonce,
      outputs: h.outputs,
      payload_sha512: h.payloadSha512,
      signer_public_key: h.signerPublicKey,
    },
    header_signature: t.headerSignature,
    payload: b64(t.payload),
  };
}

export function batchJson(b: BatchMsg): BatchJson {
  const h = decode(BatchHeader, b.header);
  return {
    header: { signer_public_key: h.signerPublicKey, transaction_ids: h.transactionIds },
    header_signature: b.headerSignature,
    trace: b.trace,
    transactions: b.transactions.map(txnJson),
  };
}

export function decodeBlockHeader(bytes: Uint8Array): BlockHeaderMsg {
  return decode(BlockHeader, bytes);
}

export function blockNumOf(h: BlockHeaderMsg): number {
  return Number(h.blockNum.toString());
}

export function decodeBlock(bytes: Uint8Array): BlockMsg {
  return decode(Block, bytes);
}

/** The JSON of a stored block, with its number. */
export function blockJson(bytes: Uint8Array): { json: BlockJson; num: number } {
  const block = decodeBlock(bytes);
  const h = decodeBlockHeader(block.header);
  const num = blockNumOf(h);
  return {
    num,
    json: {
      batches: block.batches.map(batchJson),
      header: {
        batch_ids: h.batchIds,
        block_num: String(num),
        consensus: b64(h.consensus),
        previous_block_id: h.previousBlockId,
        signer_public_key: h.signerPublicKey,
        state_root_hash: h.stateRootHash,
      },
      header_signature: block.headerSignature,
    },
  };
}

export const CHANGE_TYPES = ['TYPE_UNSET', 'SET', 'DELETE'] as const;

export interface ReceiptMsg {
  stateChanges: Array<{ address: string; value: Uint8Array; type: number }>;
  events: Array<{ eventType: string; attributes: Array<{ key: string; value: string }>; data: Uint8Array }>;
  data: Uint8Array[];
  transactionId: string;
}

export function decodeReceipt(bytes: Uint8Array): ReceiptMsg {
  return decode<ReceiptMsg>(TransactionReceipt, bytes);
}

/** Sets `key` on `o` unless `v` is the empty string (upstream drops "" values from receipts). */
function put(o: Record<string, unknown>, key: string, v: string): void {
  if (v !== '') o[key] = v;
}

/**
 * A receipt as /receipts shows it: every "" value dropped (so a DELETE has no `value`, an
 * event without data no `data`), `transaction_id` renamed `id`; SETs before DELETEs as stored.
 */
export function receiptJson(bytes: Uint8Array): object {
  const r = decodeReceipt(bytes);
  const o: Record<string, unknown> = {
    data: r.data.map(b64),
    events: r.events.map((e) => {
      const ev: Record<string, unknown> = {
        attributes: e.attributes.map((a) => {
          const at: Record<string, unknown> = {};
          put(at, 'key', a.key);
          put(at, 'value', a.value);
          return at;
        }),
      };
      put(ev, 'data', b64(e.data));
      put(ev, 'event_type', e.eventType);
      return ev;
    }),
  };
  put(o, 'id', r.transactionId);
  o.state_changes = r.stateChanges.map((c) => {
    const sc: Record<string, unknown> = {};
    put(sc, 'address', c.address);
    sc.type = CHANGE_TYPES[c.type] ?? 'TYPE_UNSET';
    put(sc, 'value', b64(c.value));
    return sc;
  });
  return o;
}
