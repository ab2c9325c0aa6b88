/**
 * The chain writer: writes a built block (or a round of verdicts) in ONE LMDB transaction
 * (state delta, block, id and receipt records, verdicts, read-model projection, new head; every
 * N blocks the state checkpoint) and resolves once it is durable; or discards it. Built
 * blocks are staged first: their state records are readable (by the block builder,
 * through `state`) before they are durable, so the next block can be built on top while
 * this one is written. The state engine (src/state/engine.ts) keeps the records made since
 * the last checkpoint in memory.
 */
import { MerkleTree } from '../state/merkle.js';
import { StateEngine } from '../state/engine.js';
import type { StateStore } from '../state/state-store.js';
import type { LeafEncoding } from '../state/node.js';
import { HEAD, ReadModelDbs, type ChainHead, type LedgerStores } from '../store/ledger-stores.js';
import { isCount, MetaRecord } from '../store/meta-record.js';
import type { FaultPoint } from '../testing/faults.js';
import type { ReadModelWriter } from './read-model/index.js';
import type { ProjectorEntry } from './catalog.js';
import { readModelDbName } from '../store/names.js';
import { encodeStoredReceipt, type BuiltBlock } from './block-builder.js';
import { IdIndex, encodeIdRecord, encodeReceipts } from '../store/id-index.js';
import { IdRunWriter } from '../store/id-run-writer.js';
import { migrateIdIndexes } from '../store/id-migration.js';
import { withinTime } from '../store/alarms.js';
import { trackWrite } from '../store/write-errors.js';

/** Default of ChainWriterOptions.stallMs. */
export const DEFAULT_STALL_MS = 60_000;
/** Meta key of the record a recovery probe writes. */
const PROBE = new MetaRecord<number>('probe', isCount);

/** Parent id of block 0. */
export const NULL_BLOCK_ID = '0000000000000000';

export interface ChainWriterOptions {
  stores: LedgerStores;
  leafEncoding: LeafEncoding;
  projectors: readonly ProjectorEntry[];
  /** Test-only fault injection of the block transaction (null in production). */
  writeFault: FaultPoint | null;
  /** Prefix of the read-model sub-database names ('' or absent: the node ledger's names). */
  readModelPrefix?: string;
  /** Blocks between state checkpoints (default DEFAULT_CHECKPOINT_BLOCKS). */
  checkpointEvery?: number;
  /** Merkle records a block writes for a checkpoint at most (default DEFAULT_CHECKPOINT_CHUNK). */
  checkpointChunk?: number;
  /** Bytes of Merkle records in memory that start a checkpoint sooner (default DEFAULT_CHECKPOINT_BYTES). */
  checkpointBytes?: number;
  /**
   * Longest a round's transaction may take to become durable (ms, default DEFAULT_STALL_MS):
   * past it the write counts as failed ("storage stalled"), so that a device that hangs, or
   * lmdb-js's writer wedged by an earlier failed commit, raises an alarm instead of
   * stopping block production silently.
   */
  stallMs?: number;
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
  readonly #engine: StateEngine;
  #loaded = false;
  readonly #projectors: readonly ProjectorEntry[];
  readonly #readModel: ReadModelWriter;
  readonly #writeFault: FaultPoint | null;
  readonly #stallMs: number;
  /** Set when the committer stopped: a round whose transaction runs later writes nothing. */
  #halted = false;
  /** The state as of any stored or staged root: what blocks are built on. */
  readonly state: StateStore;
  /** Where committed batches and transactions are (as far as durable blocks go). */
  readonly ids: IdIndex;
  /** Writes the id index's runs on disk as blocks make them due. */
  readonly idRuns: IdRunWriter;

  constructor(opts: ChainWriterOptions) {
    const s = opts.stores;
    this.#s = s;
    this.ids = new IdIndex(s);
    this.idRuns = new IdRunWriter(s);
    this.#engine = new StateEngine(s, {
      leafEncoding: opts.leafEncoding,
      checkpointEvery: opts.checkpointEvery,
      checkpointChunk: opts.checkpointChunk,
      checkpointBytes: opts.checkpointBytes,
    });
    const tree = (): StateStore => {
      if (!this.#loaded) this.loadState();
      return this.#engine.tree;
    };
    this.state = {
      get: (root, address) => tree().get(root, address),
      entries: (root, prefix, o) => tree().entries(root, prefix, o),
      update: (root, sets, deletes) => tree().update(root, sets, deletes),
    };
    this.#projectors = opts.projectors;
    this.#writeFault = opts.writeFault;
    this.#stallMs = opts.stallMs ?? DEFAULT_STALL_MS;
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
    return HEAD.get(this.#s.meta);
  }

  /**
   * Loads the state as of the durable head (its checkpoint and the deltas after it); done
   * on first use if not called. Throws CorruptStateError when the stored state does not
   * give the head's root.
   */
  loadState(): void {
    migrateIdIndexes(this.#s);
    this.#engine.recover(this.storedHead());
    this.#loaded = true;
  }

  /** The state engine (for its figures). */
  get engine(): StateEngine {
    return this.#engine;
  }

  /** Writes the records of the empty state root (once, before genesis). */
  async writeEmptyRoot(): Promise<void> {
    await trackWrite(
      'the empty state root',
      this.#s.root.transaction(() => {
        for (const [k, v] of MerkleTree.emptyRootWrites()) this.#s.merkle.put(k, v);
      }),
    );
  }

  /**
   * Writes an initial state that no block made (a circuit ledger's round 0: its admin setting
   * on the empty root): the state's Merkle records, `head` and `meta`, in one transaction,
   * durable when this resolves; then loads the state as of it. The test hook's write fault
   * counts rounds, not this. A ledger whose first block is built (genesis.ts) writes it
   * with `write`.
   */
  async writeInitialState(head: ChainHead, merkleWrites: Iterable<[Buffer, Buffer]>, meta: Array<[string, unknown]> = []): Promise<void> {
    const s = this.#s;
    const commit = async (): Promise<void> => {
      await withinTime(
        s.root.transaction(() => {
          if (HEAD.get(s.meta) !== undefined) throw new Error('the initial state goes on an empty chain only');
          for (const [k, v] of merkleWrites) s.merkle.put(k, v);
          HEAD.put(s.meta, head);
          for (const [k, v] of meta) s.meta.put(k, v);
        }),
        this.#stallMs,
        'the transaction of the initial state',
      );
      await withinTime(s.root.flushed, this.#stallMs, 'the sync of the initial state');
    };
    await trackWrite('the initial state', commit());
    this.loadState();
  }

  /**
   * Writes no more rounds: those whose transaction lmdb-js runs from now on write nothing. A
   * failed committer calls it, so that a round it handed over before cannot land after a new
   * committer, in another thread, read the head it builds on.
   */
  halt(): void {
    this.#halted = true;
    this.idRuns.stop();
  }

  /** One small durable write: resolves when the ledger file takes writes again, else throws. */
  async probe(): Promise<void> {
    const s = this.#s;
    const probe = async (): Promise<void> => {
      await withinTime(
        s.root.childTransaction(() => void PROBE.put(s.meta, Date.now())),
        this.#stallMs,
        'a ledger probe write',
      );
      await withinTime(s.root.flushed, this.#stallMs, 'a ledger probe sync');
    };
    await trackWrite('a ledger probe write', probe());
  }

  /** Makes a built block's state readable to the builder before it is durable. */
  stage(built: BuiltBlock): void {
    if (!this.#loaded) this.loadState();
    if (built.head) this.#engine.stage(built.head.blockNum, built.merkleWrites);
  }

  /**
   * Writes a built round in one LMDB transaction, only on top of its parent (once a round
   * failed, the rounds built on it fail too: the chain never gets a gap); resolves once
   * it is durable. `meta` entries are written in the same transaction.
   */
  async write(built: BuiltBlock, meta?: Array<[string, unknown]>, extras?: WriteExtras): Promise<void> {
    const s = this.#s;
    const { head, blockBytes } = built;
    if (!this.#loaded) this.loadState();
    let checkpoint: number | null = null;
    const writeRound = (): void => {
      if (this.#halted) throw new Error('the committer stopped: this round is not written');
      this.#writeFault?.check();
      const stored = HEAD.get(s.meta);
      if ((stored?.blockId ?? NULL_BLOCK_ID) !== built.parent.blockId) {
        throw new Error(`round built on block ${built.parent.blockNum}, but the stored head is ${stored?.blockNum ?? 'none'}`);
      }
      if (meta) for (const [k, v] of meta) s.meta.put(k, v);
      if (head && blockBytes) {
        checkpoint = this.#engine.writeBlock(built.parent, head, built.merkleWrites, built.stateWrites);
        s.blocks.put(head.blockId, Buffer.from(blockBytes));
        s.blockByNum.put(head.blockNum, head.blockId);
        // The ids and receipts of the block: two appended records, no page per id (id-index.ts).
        const receipts: Uint8Array[] = [];
        const ids = built.included.map(({ entry, batch, receipts: rs }) => {
          for (const r of rs) receipts.push(encodeStoredReceipt(r));
          return { id: entry.id, txns: batch.transactions.map((t) => t.headerSignature) };
        });
        s.blockIds.put(head.blockNum, encodeIdRecord(ids));
        s.receipts.put(head.blockNum, encodeReceipts(receipts));
        this.idRuns.afterBlock(head.blockNum);
        HEAD.put(s.meta, head);
        if (this.#projectors.length) this.#project(built, head, extras?.timestampSec);
      }
      for (const { entry, record } of built.invalid) s.invalid.put(entry.id, record);
      extras?.also?.();
    };
    const what = head ? `block ${head.blockNum}` : 'a verdict round';
    const commit = async (): Promise<void> => {
      // A child transaction: if anything in here throws, none of this round's writes stay
      // in the (shared, batched) LMDB transaction.
      await withinTime(
        s.root.childTransaction(() => {
          try {
            writeRound();
          } catch (err) {
            this.#engine.writeFailed();
            throw err;
          }
        }),
        this.#stallMs,
        `the transaction of ${what}`,
      );
      // lmdb-js syncs after commit (overlapping sync): a block counts once it is on disk.
      await withinTime(s.root.flushed, this.#stallMs, `the sync of ${what}`);
    };
    try {
      // In flight until durable: an error lmdb-js prints meanwhile is this round's (write-errors.ts).
      await trackWrite(`the write of ${what}`, commit());
    } catch (err) {
      this.#engine.writeFailed();
      throw err;
    }
    this.#engine.durable(checkpoint);
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
