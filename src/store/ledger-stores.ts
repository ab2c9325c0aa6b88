/**
 * Typed handles on a ledger's sub-databases. Both the committer thread (the only
 * writer) and the HTTP thread's query service (reads) open them with the same options;
 * nothing outside the ledger engine and the storage tools (check, prune) uses them.
 */
import type { Database, RootDatabase } from 'lmdb';
import { ledgerDbNames, NODE_LEDGER_PREFIX } from './names.js';
import { openStore } from './checksum.js';
import { fields, MetaRecord, type MetaDb } from './meta-record.js';

export interface ChainHead {
  blockId: string;
  blockNum: number;
  stateRoot: string;
}

export type { BatchPos, TxnPos } from './id-index.js';

export interface InvalidRecord {
  invalid_transactions: Array<{ id: string; message: string; extended_data: string }>;
  /** Pending-pool sequence number of the submission this verdict settled. */
  seq?: number;
}

export interface LedgerStores {
  root: RootDatabase;
  /** The prefix of the sub-database names (names.ts). */
  prefix: string;
  merkle: Database<Buffer, Buffer>;
  blocks: Database<Buffer, string>;
  blockByNum: Database<string, number>;
  /** Batch and transaction ids of each block (appended; see id-index.ts). */
  blockIds: Database<Buffer, number>;
  /** Receipts of each block's transactions (appended). */
  receipts: Database<Buffer, number>;
  /** The id index's runs (src/store/id-runs.ts). */
  idRuns: Database<Buffer, number>;
  idChunks: Database<Buffer, Buffer>;
  /** Records of several shapes, each read and written through its MetaRecord (meta-record.ts). */
  meta: MetaDb;
  invalid: Database<InvalidRecord, string>;
  /** State deltas by block number: appended, so a block's delta costs no random page write. */
  deltas: Database<Buffer, number>;
  /** State root (32 bytes) -> the newest block with it. */
  roots: Database<number, Buffer>;
}

/** The stores of the ledger whose sub-database names carry `prefix` (see names.ts). */
export function openLedgerStores(root: RootDatabase, prefix: string = NODE_LEDGER_PREFIX): LedgerStores {
  const n = ledgerDbNames(prefix);
  return {
    root,
    prefix,
    merkle: root.openDB<Buffer, Buffer>(n.merkle, { keyEncoding: 'binary', encoding: 'binary' }),
    blocks: openStore<Buffer, string>(root, n.blocks, { binary: true }),
    blockByNum: openStore<string, number>(root, n.blockByNum),
    blockIds: openStore<Buffer, number>(root, n.blockIds, { keyEncoding: 'uint32', binary: true }),
    receipts: openStore<Buffer, number>(root, n.receipts, { keyEncoding: 'uint32', binary: true }),
    idRuns: openStore<Buffer, number>(root, n.idRuns, { keyEncoding: 'uint32', binary: true }),
    idChunks: openStore<Buffer, Buffer>(root, n.idChunks, { keyEncoding: 'binary', binary: true }),
    meta: openStore<unknown, string>(root, n.meta),
    invalid: openStore<InvalidRecord, string>(root, n.invalid),
    deltas: openStore<Buffer, number>(root, n.stateDeltas, { keyEncoding: 'uint32', binary: true }),
    roots: openStore<number, Buffer>(root, n.stateRoots, { keyEncoding: 'binary' }),
  };
}

export const HEAD_KEY = 'head';

/** The chain's head: the last block written, in the same transaction as the block. */
export const HEAD = new MetaRecord<ChainHead>(HEAD_KEY, fields<ChainHead>({ blockId: 'string', blockNum: 'number', stateRoot: 'string' }));

/**
 * Read-model sub-databases (msgpack values), opened lazily by name and cached: the chain
 * writer's side, which stores what each projector hands it and gives it back to that
 * projector (which checks what it reads back). The values are the projector's; the typed
 * reader of the supply-chain records is src/ledger/read-model/reader.ts.
 */
export class ReadModelDbs {
  readonly #dbs = new Map<string, Database<unknown, string>>();
  constructor(private readonly root: RootDatabase) {}
  db(name: string): Database<unknown, string> {
    let d = this.#dbs.get(name);
    if (!d) {
      d = openStore<unknown, string>(this.root, name);
      this.#dbs.set(name, d);
    }
    return d;
  }
}
