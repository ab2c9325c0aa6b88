/**
 * Reply schemas of the ledger gateway (compiled by fast-json-stringify when the routes
 * are mounted): compact JSON, keys in alphabetical order at every level (schema
 * properties are listed sorted).
 */
import type { ReplySchema } from '../http/route.js';

const str = { type: 'string' } as const;
const strArr = { type: 'array', items: str } as const;

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

/** One block as the gateway writes it (its serialised form is also cached per block: chain.ts). */
export const blockSchema = {
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
    start: { type: ['string', 'null'] },
  },
  // No `required`: fast-json-stringify writes required keys first, which would break the key order.
} as const;

const stateEntrySchema = { type: 'object', properties: { address: str, data: str } } as const;

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
    state_changes: { type: 'array', items: { type: 'object', properties: { address: str, type: str, value: str } } },
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
    // A PENDING batch that waits on a transaction processor: why (absent otherwise; not in upstream).
    reason: str,
    status: str,
  },
} as const;

/** The members of a list reply after `data` (a page of blocks writes `data` from cached bytes). */
export const listEnvelope: ReplySchema = { type: 'object', properties: { head: str, link: str, paging: pagingSchema } };

const list = (items: object): ReplySchema => ({
  type: 'object',
  properties: { data: { type: 'array', items }, head: str, link: str, paging: pagingSchema },
});
const one = (data: object, withHead = false): ReplySchema => ({
  type: 'object',
  properties: withHead ? { data, head: str, link: str } : { data, link: str },
});

export const replies = {
  blockList: list(blockSchema),
  block: one(blockSchema),
  batchList: list(batchSchema),
  batch: one(batchSchema),
  txnList: list(txnSchema),
  txn: one(txnSchema),
  stateList: list(stateEntrySchema),
  stateOne: one(str, true),
  statuses: { type: 'object', properties: { data: { type: 'array', items: statusSchema }, link: str } },
  receipts: { type: 'object', properties: { data: { type: 'array', items: receiptSchema }, link: str } },
  link: { type: 'object', properties: { link: str } },
  peers: one(strArr),
  status: one({
    type: 'object',
    properties: {
      endpoint: str,
      peers: { type: 'array', items: { type: 'object', properties: { endpoint: str } } },
      // A cluster member's view (absent on a single node).
      cluster: {
        type: 'object',
        properties: {
          node_id: str,
          members: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                node_id: str,
                public_key: str,
                ledger_url: str,
                live: { type: 'boolean' },
                applied: { type: 'integer' },
                height: { type: 'integer' },
              },
            },
          },
          log: {
            type: 'object',
            properties: { applied: { type: 'integer' }, seen: { type: 'integer' }, lag: { type: 'integer' }, append_spacing_ms: { type: 'integer' } },
          },
        },
      },
      // The background read of every stored record (src/store/scan.ts).
      start_scan: {
        type: 'object',
        properties: { state: str, read_bytes: { type: 'integer' }, total_bytes: { type: 'integer' } },
      },
      // The transaction processor endpoint's view (absent when it is off).
      transaction_processors: {
        type: 'object',
        properties: {
          families: { type: 'array', items: { type: 'object', properties: { family: str, processors: { type: 'integer' } } } },
          set_aside: { type: 'array', items: { type: 'object', properties: { family: str, reason: str } } },
          batches_set_aside: { type: 'integer' },
          transactions_set_aside: { type: 'integer' },
          processors_set_aside: { type: 'integer' },
        },
      },
    },
  }),
} satisfies Record<string, ReplySchema>;
