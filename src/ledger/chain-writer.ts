/**
 * The chain writer: writes a built block (or a round of verdicts) in ONE LMDB transaction
 * (state records, block, indexes, receipts, verdicts, read-model projection, new head)
 * and resolves once it is durable; or discards it. Built blocks are staged first: their
 * state records are readable (by the block builder, through `state`) before they are
 * durable, so the next block can be built on top while this one is written.
 */
import type { Database } from 'lmdb';
import { MerkleTree } from '../state/merkle.js';
import type { StateStore } from '../state/state-store.js';
import type { LeafEncoding } from '../state/node.js';
import { HEAD_KEY, ReadModelDbs, type ChainHead, type LedgerStores } from '../store/ledger-stores.js';
import type { FaultPoint } from '../store/test-faults.js';
import type { ReadModelWriter } from '../data-api/read-model/index.js';
import type { ProjectorEntry } from './catalog.js';
import { readModelDbName } from '../store/names.js';
import { encodeReceipt, type BuiltBlock } from './block-builder.js';

/** Parent id of block 0. */
export const NULL_BLOCK_ID = '0000000000000000';

/** Reads Merkle records from the staged blocks first, then from LMDB. */
class StagedRecords {
  readonly map = new Map<string, Buffer>();
  constructor(private readonly db: Database<Buffer, Buffer>) {}
  getBinaryFast(key: Buffer): Buffer | undefined {
    return this.map.size ? (this.map.get(key.toString('latin1')) ?? this.db.getBinaryFast(key)) : this.db.getBinaryFast(key);
  }
  getBinary(key: Buffer): Buffer | undefined {
    return this.map.size ? (this.map.get(key.toString('latin1')) ?? this.db.getBinary(key)) : this.db.getBinary(key);
  }
}

export interface ChainWriterOptions {
  stores: LedgerStores;
  leafEncoding: LeafEncoding;
  projectors: readonly ProjectorEntry[];
  /** Test-only fault injection of the block transaction (null in production). */
  writeFault: FaultPoint | null;
  /** Prefix of the read-model sub-database names ('' or absent: the node ledger's names). */
  readModelPrefix?: string;
}

/** More of a round written in the same transaction. */
export interface WriteExtras {
  /** Timestamp (s) the read models stamp (default: now); agreed rounds pass theirs. */
  timestampSec?: number;
  /** Further writes, run inside the round's transaction. */
  also?: () => void;
}

export class ChainWriter {
  readonly #s: LedgerStores;
  readonly #staged: StagedRecords;
  readonly #projectors: readonly ProjectorEntry[];
  readonly #readModel: ReadModelWriter;
  readonly #writeFault: FaultPoint | null;
  /** The state as of any stored or staged root: what blocks are built on. */
  readonly state: StateStore;

  constructor(opts: ChainWriterOptions) {
    const s = opts.stores;
    this.#s = s;
    this.#staged = new StagedRecords(s.merkle);
    this.state = new MerkleTree(this.#staged as unknown as Database<Buffer, Buffer>, { leafEncoding: opts.leafEncoding });
    this.#projectors = opts.projectors;
    this.#writeFault = opts.writeFault;
    // Opened up front: never inside a write transaction.
    const dbs = new ReadModelDbs(s.root);
    const prefix = opts.readModelPrefix ?? '';
    const name = (db: string): string => readModelDbName(prefix, db);
    for (const p of opts.projectors) for (const n of p.dbNames) dbs.db(name(n));
    this.#readModel = {
      put: (db, key, value) => void dbs.db(name(db)).put(key, value),
      remove: (db, key) => void dbs.db(name(db)).remove(key),
      get: (db, key) => dbs.db(name(db)).get(key),
    };
  }

  /** The durable head, if the chain has one. */
  storedHead(): ChainHead | undefined {
    return this.#s.meta.get(HEAD_KEY) as ChainHead | undefined;
  }

  /** Writes the records of the empty state root (once, before genesis). */
  async writeEmptyRoot(): Promise<void> {
    await this.#s.root.transaction(() => {
      for (const [k, v] of MerkleTree.emptyRootWrites()) this.#s.merkle.put(k, v);
    });
  }

  /** Makes a built block's state readable to the builder before it is durable. */
  stage(built: BuiltBlock): void {
    for (const [k, v] of built.merkleWrites) this.#staged.map.set(k.toString('latin1'), v);
  }

  /** Drops a staged block's state (once it is durable, or when it is discarded). */
  unstage(built: BuiltBlock): void {
    for (const [k] of built.merkleWrites) this.#staged.map.delete(k.toString('latin1'));
  }

  /** A built block that is not to be written: nothing of it stays. */
  discard(built: BuiltBlock): void {
    this.unstage(built);
  }

  /**
   * Writes a built round in one LMDB transaction, only on top of its parent (once a round
   * failed, the rounds built on it fail too: the chain never gets a gap); resolves once
   * it is durable. `meta` entries are written in the same transaction.
   */
  async write(built: BuiltBlock, meta?: Array<[string, unknown]>, extras?: WriteExtras): Promise<void> {
    const s = this.#s;
    const { head, blockBytes } = built;
    // A child transaction: if anything in here throws, none of this round's writes stay
    // in the (shared, batched) LMDB transaction.
    await s.root.childTransaction(() => {
      this.#writeFault?.check();
      const stored = s.meta.get(HEAD_KEY) as ChainHead | undefined;
      if ((stored?.blockId ?? NULL_BLOCK_ID) !== built.parent.blockId) {
        throw new Error(`round built on block ${built.parent.blockNum}, but the stored head is ${stored?.blockNum ?? 'none'}`);
      }
      if (meta) for (const [k, v] of meta) s.meta.put(k, v);
      for (const [k, v] of built.merkleWrites) s.merkle.put(k, v);
      if (head && blockBytes) {
        s.blocks.put(head.blockId, Buffer.from(blockBytes));
        s.blockByNum.put(head.blockNum, head.blockId);
        built.included.forEach(({ entry, batch, receipts }, bi) => {
          s.batchIndex.put(entry.id, [head.blockNum, bi]);
          batch.transactions.forEach((t, ti) => {
            s.txnIndex.put(t.headerSignature, [head.blockNum, bi, ti, Buffer.from(encodeReceipt(receipts[ti]!))]);
          });
        });
        s.meta.put(HEAD_KEY, head);
        if (this.#projectors.length) this.#project(built, head, extras?.timestampSec);
      }
      for (const { entry, record } of built.invalid) s.invalid.put(entry.id, record);
      extras?.also?.();
    });
    // lmdb-js syncs after commit (overlapping sync): a block counts once it is on disk.
    await s.root.flushed;
  }

  /** Runs the read-model projectors over the block's state changes (inside its transaction). */
  #project(built: BuiltBlock, head: ChainHead, timestampSec?: number): void {
    const info = { blockNum: head.blockNum, blockId: head.blockId, timestamp: timestampSec ?? Math.floor(Date.now() / 1000) };
    for (const [address, value] of built.stateWrites) {
      for (const { projector: p } of this.#projectors) {
        if (p.namespaces.some((ns) => address.startsWith(ns))) p.project(address, value ?? undefined, this.#readModel, info);
      }
    }
  }
}
