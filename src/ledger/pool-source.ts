/**
 * The single node's batch source: the pending pool (batch-pool.ts) in order of arrival.
 * Every round takes what waits, passing over batches that wait on a dependency; a round's
 * transaction also carries the pool's sequence high-water mark (SEQ_KEY).
 */
import type { RootDatabase } from 'lmdb';
import type { LedgerStores } from '../store/ledger-stores.js';
import { isCount, MetaRecord } from '../store/meta-record.js';
import type { IdIndex } from '../store/id-index.js';
import type { BuiltBlock } from './block-builder.js';
import { BatchPool, type PoolEntry } from './batch-pool.js';
import type { BatchSource, RoundPlan, RoundWrites, SourceFigures } from './source.js';

/** Default of the dependency wait (CommitterOptions.dependencyWaitMs). */
const DEFAULT_DEPENDENCY_WAIT_MS = 60_000;
/**
 * Meta key of the pending-pool sequence high-water mark: every sequence number below it
 * has been used. Written with each block or verdict, so that numbering never restarts
 * below a stored verdict's `seq` (which would make a resubmitted batch look settled).
 */
const SEQ = new MetaRecord<number>('next_seq', isCount);

export interface PoolSourceOptions {
  stores: LedgerStores;
  ids: IdIndex;
  pending: RootDatabase<Buffer, number>;
  /** Batches per block at most (0: no limit). */
  maxBatchesPerBlock: number;
  dependencyWaitMs?: number;
  queueMultiplier: number;
  queueInitialAverage: number;
  /** Removing settled segments failed (the committer stops). */
  onDropFailed(err: unknown): Promise<void> | void;
}

export class PoolSource implements BatchSource<PoolEntry> {
  readonly #o: PoolSourceOptions;
  readonly #pool: BatchPool;
  /** Highest sequence number durable in the ledger meta store (see SEQ_KEY). */
  #seqMark = 0;
  #wake: () => void = () => undefined;

  constructor(o: PoolSourceOptions) {
    this.#o = o;
    this.#pool = new BatchPool(o.pending, o);
  }

  attach(wake: () => void): void {
    this.#wake = wake;
  }

  async recover(): Promise<void> {
    const { stores: s, ids } = this.#o;
    this.#seqMark = SEQ.get(s.meta) ?? 0;
    await this.#pool.recover(this.#seqMark, (id, seq) => {
      if (ids.hasBatch(id)) return true;
      const verdict = s.invalid.get(id);
      return verdict?.seq !== undefined && verdict.seq >= seq;
    });
  }

  /** Batches the HTTP thread has written durably as pending-pool segment `seg`. */
  add(seg: number, batches: Array<{ id: string; bytes: Uint8Array }>): void {
    this.#pool.add(seg, batches, (id) => this.#o.ids.hasBatch(id));
    this.#wake();
  }

  get length(): number {
    return this.#pool.length;
  }

  /** Ids of the batches waiting, and the next sequence number (for the ready message). */
  get pendingIds(): string[] {
    return this.#pool.queue.map((e) => e.id);
  }

  get nextSeq(): number {
    return this.#pool.nextSeq;
  }

  next(_tip: unknown, inFlight: ReadonlySet<string>): RoundPlan<PoolEntry> | null {
    if (this.#pool.length <= inFlight.size) return null;
    return {
      entries: this.#pool.queue,
      max: this.#o.maxBatchesPerBlock || Infinity,
      dependencyWaitMs: this.#o.dependencyWaitMs ?? DEFAULT_DEPENDENCY_WAIT_MS,
    };
  }

  accepted(): void {}

  rejected(): void {}

  writes(built: BuiltBlock<PoolEntry>): RoundWrites {
    const prev = this.#seqMark;
    let mark = prev;
    for (const { entry } of built.included) if (entry.seq >= mark) mark = entry.seq + 1;
    for (const { entry } of built.invalid) if (entry.seq >= mark) mark = entry.seq + 1;
    this.#seqMark = mark;
    return mark > prev ? { meta: [SEQ.entry(mark)] } : {};
  }

  settle(built: BuiltBlock<PoolEntry>, _plan: unknown, waiting: number): void {
    // Only now that the round is durable may its batches leave the pending pool.
    this.#pool.settle([...built.included.map((i) => i.entry), ...built.invalid.map((i) => i.entry)]);
    if (built.head) this.#pool.noteBlock(built.included.length, waiting);
  }

  figures(): SourceFigures {
    return { pendingCount: this.#pool.length, queueLimit: this.#pool.queueLimit };
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}
