/**
 * Interface C record shapes (Sawtooth 1.2 REST): snake_case keys in alphabetical order,
 * headers inlined as objects, bytes as standard base64, 64-bit block numbers as strings,
 * enums by name. Serialised with precompiled fast-json-stringify schemas.
 */
import fastJson from 'fast-json-stringify';
import {
  Block,
  BlockHeader,
  Batch,
  BatchHeader,
  TransactionHeader,
  TransactionReceipt,
  type BatchHeaderMsg,
  type BatchMsg,
  type BlockHeaderMsg,
  type BlockMsg,
  type TransactionHeaderMsg,
  type TransactionMsg,
} from '../proto/index.js';

const str = { type: 'string' } as const;
const strArr = { type: 'array', items: str } as const;
const nullableStr = { type: ['string', 'null'] } as const;

const txnSchema = {
  type: 'object',
  properties: {
    header: {
      type: 'object',
      properties: {
        batcher_public_key: str,
        dependencies: strArr,
        family_name: str,
        family_version: str,
        inputs: strArr,
        nonce: str,
        outputs: strArr,
        payload_sha512: str,
        signer_public_key: str,
      },
    },
    header_signature: str,
    payload: str,
  },
} as const;

const batchSchema = {
  type: 'object',
  properties: {
    header: { type: 'object', properties: { signer_public_key: str, transaction_ids: strArr } },
    header_signature: str,
    trace: { type: 'boolean' },
    transactions: { type: 'array', items: txnSchema },
  },
} as const;

const blockSchema = {
  type: 'object',
  properties: {
    batches: { type: 'array', items: batchSchema },
    header: {
      type: 'object',
      properties: {
        batch_ids: strArr,
        block_num: str,
        consensus: str,
        previous_block_id: str,
        signer_public_key: str,
        state_root_hash: str,
      },
    },
    header_signature: str,
  },
} as const;

const pagingSchema = {
  type: 'object',
  properties: {
    limit: { type: ['integer', 'null'] },
    next: str,
    next_position: str,
    start: nullableStr,
  },
  required: ['limit', 'start'],
} as const;

const stateEntrySchema = { type: 'object', properties: { address: str, data: str } } as const;

const stateChangeSchema = {
  type: 'object',
  properties: { address: str, type: str, value: str },
} as const;

const receiptSchema = {
  type: 'object',
  properties: {
    data: strArr,
    events: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          attributes: { type: 'array', items: { type: 'object', properties: { key: str, value: str } } },
          data: str,
          event_type: str,
        },
      },
    },
    id: str,
    state_changes: { type: 'array', items: stateChangeSchema },
  },
} as const;

const statusSchema = {
  type: 'object',
  properties: {
    id: str,
    invalid_transactions: {
      type: 'array',
      items: { type: 'object', properties: { extended_data: str, id: str, message: str } },
    },
    status: str,
  },
} as const;

const list = (items: object): object => ({
  type: 'object',
  properties: { data: { type: 'array', items }, head: str, link: str, paging: pagingSchema },
});
const one = (data: object, withHead = false): object => ({
  type: 'object',
  properties: withHead ? { data, head: str, link: str } : { data, link: str },
});

export const serialize = {
  blockList: fastJson(list(blockSchema)),
  block: fastJson(one(blockSchema)),
  batchList: fastJson(list(batchSchema)),
  batch: fastJson(one(batchSchema)),
  txnList: fastJson(list(txnSchema)),
  txn: fastJson(one(txnSchema)),
  stateList: fastJson(list(stateEntrySchema)),
  stateOne: fastJson(one(str, true)),
  statuses: fastJson({ type: 'object', properties: { data: { type: 'array', items: statusSchema }, link: str } }),
  receipts: fastJson({ type: 'object', properties: { data: { type: 'array', items: receiptSchema }, link: str } }),
  link: fastJson({ type: 'object', properties: { link: str } }),
  peers: fastJson(one(strArr)),
  status: fastJson(
    one({
      type: 'object',
      properties: { endpoint: str, peers: { type: 'array', items: { type: 'object', properties: { endpoint: str } } } },
    }),
  ),
};

const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');

export interface TxnJson {
  header: Record<string, unknown>;
  header_signature: string;
  payload: string;
}

export function txnJson(t: TransactionMsg): TxnJson {
  const h = TransactionHeader.decode(t.header) as unknown as TransactionHeaderMsg;
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

export interface BatchJson {
  header: { signer_public_key: string; transaction_ids: string[] };
  header_signature: string;
  trace: boolean;
  transactions: TxnJson[];
}

export function batchJson(b: BatchMsg): BatchJson {
  const h = BatchHeader.decode(b.header) as unknown as BatchHeaderMsg;
  return {
    header: { signer_public_key: h.signerPublicKey, transaction_ids: h.transactionIds },
    header_signature: b.headerSignature,
    trace: b.trace,
    transactions: b.transactions.map(txnJson),
  };
}

export function decodeBlockHeader(bytes: Uint8Array): BlockHeaderMsg {
  return BlockHeader.decode(bytes) as unknown as BlockHeaderMsg;
}

export function blockNumOf(h: BlockHeaderMsg): number {
  return Number(h.blockNum.toString());
}

export function blockJson(bytes: Uint8Array): { json: object; header: BlockHeaderMsg; block: BlockMsg } {
  const block = Block.decode(bytes) as unknown as BlockMsg;
  const h = decodeBlockHeader(block.header);
  return {
    header: h,
    block,
    json: {
      batches: block.batches.map(batchJson),
      header: {
        batch_ids: h.batchIds,
        block_num: String(blockNumOf(h)),
        consensus: b64(h.consensus),
        previous_block_id: h.previousBlockId,
        signer_public_key: h.signerPublicKey,
        state_root_hash: h.stateRootHash,
      },
      header_signature: block.headerSignature,
    },
  };
}

export function decodeBatch(bytes: Uint8Array): BatchMsg {
  return Batch.decode(bytes) as unknown as BatchMsg;
}

const TYPE_NAMES = ['TYPE_UNSET', 'SET', 'DELETE'];

interface ReceiptMsg {
  stateChanges: Array<{ address: string; value: Uint8Array; type: number }>;
  events: Array<{ eventType: string; attributes: Array<{ key: string; value: string }>; data: Uint8Array }>;
  data: Uint8Array[];
  transactionId: string;
}

/** Receipt JSON as /receipts shows it: empty strings dropped, transaction_id renamed id. */
export function receiptJson(bytes: Uint8Array): object {
  const r = TransactionReceipt.decode(bytes) as unknown as ReceiptMsg;
  return {
    data: r.data.map(b64),
    events: r.events.map((e) => {
      const ev: Record<string, unknown> = {
        attributes: e.attributes.map((a) => ({ key: a.key, value: a.value })),
        event_type: e.eventType,
      };
      if (e.data.length) ev.data = b64(e.data);
      return ev;
    }),
    id: r.transactionId,
    state_changes: r.stateChanges.map((c) => {
      const sc: Record<string, unknown> = { address: c.address, type: TYPE_NAMES[c.type] ?? 'TYPE_UNSET' };
      if (c.value.length) sc.value = b64(c.value);
      return sc;
    }),
  };
}

export { b64 };
