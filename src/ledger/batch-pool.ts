/**
 * The committer's batch pool: the batches waiting for a block, in order of arrival, as
 * the pending pool holds them durably (segments written by the HTTP thread); the
 * recovery of that pool on start; the removal of segments once every batch in them is
 * settled durably; and the rolling average of batches per block that sets the
 * back-pressure limit.
 */
import type { RootDatabase } from 'lmdb';
import { Batch, decode } from '../proto/index.js';
import { decodeSegment } from '../store/pending-pool.js';
import { trackWrite } from '../store/write-errors.js';
import type { BuildEntry } from './block-builder.js';

/** Rolling-average window of the back-pressure limit (samples of batches per block). */
const QUEUE_SAMPLES = 5;

/**
 * Settled segments are removed from the pending pool in groups: one transaction (and one
 * fsync) at most this often, or once this many are waiting, instead of one per block. A
 * crash before a removal only leaves segments whose batches are settled, and recovery drops
 * those (it checks each batch against the committed index and the stored verdicts).
 */
const DROP_INTERVAL_MS = 200;
const DROP_GROUP = 4096;

/**
 * Sawtooth's back-pressure average: batches per block over the last blocks, sampled when a
 * block took all there was room for or left batches waiting. The limit is a multiple of it.
 */
export class RollingAverage {
  readonly #samples: number[];
  #avg: number;

  constructor(initial: number) {
    this.#samples = [initial];
    this.#avg = initial;
  }

  get value(): number {
    return this.#avg;
  }

  /** A block consumed `consumed` batches out of `waiting`. */
  note(consumed: number, waiting: number): void {
    if (consumed === 0) return;
    if (Math.max(waiting - consumed, 0) > this.#avg || consumed > this.#avg) {
      this.#samples.push(consumed);
      if (this.#samples.length > QUEUE_SAMPLES) this.#samples.shift();
      this.#avg = Math.max(1, Math.floor(this.#samples.reduce((a, b) => a + b, 0) / this.#samples.length));
    }
  }
}

export interface PoolEntry extends BuildEntry {
  /** Key of the pending-pool record (segment) that holds it; -1 for genesis. */
  seg: number;
}

export class BatchPool {
  /** Pending batches in order of arrival (those in blocks in flight included). */
  readonly queue: PoolEntry[] = [];
  readonly #queued = new Set<string>();
  /** Unsettled batches per pending-pool segment. */
  readonly #segments = new Map<number, number>();
  /** Next sequence number after those found in the pending pool at start. */
  nextSeq = 0;
  readonly #average: RollingAverage;
  /** Removals of settled segments still being written (awaited on close). */
  readonly #drops = new Set<Promise<void>>();
  /** Settled segments not removed yet (see DROP_INTERVAL_MS). */
  #toDrop: number[] = [];
  #dropTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly pending: RootDatabase<Buffer, number>,
    private readonly opts: { queueMultiplier: number; queueInitialAverage: number; onDropFailed(err: unknown): Promise<void> | void },
  ) {
    this.#average = new RollingAverage(opts.queueInitialAverage);
  }

  get queueLimit(): number {
    return this.opts.queueMultiplier * this.#average.value;
  }

  get length(): number {
    return this.queue.length;
  }

  /**
   * Loads the pending pool at start: every batch not settled yet (`settled(id, seq)`) is
   * queued; segments with nothing left are removed. Numbering resumes at `seqMark` at least.
   */
  async recover(seqMark: number, settled: (id: string, seq: number) => boolean): Promise<void> {
    this.nextSeq = seqMark;
    const now = Date.now();
    const emptied: number[] = [];
    // Keys below 0 are the pool's own records (its identity), not segments.
    for (const { key, value } of this.pending.getRange({ start: 0 })) {
      let live = 0;
      decodeSegment(value).forEach((bytes, i) => {
        const seq = key + i;
        this.nextSeq = Math.max(this.nextSeq, seq + 1);
        const id = decode(Batch, bytes).headerSignature;
        if (this.#queued.has(id) || settled(id, seq)) return;
        this.queue.push({ seq, seg: key, id, bytes, acceptedAt: now });
        this.#queued.add(id);
        live++;
      });
      if (live) this.#segments.set(key, live);
      else emptied.push(key);
    }
    if (emptied.length) await this.#drop(emptied);
  }

  /**
   * Takes a durable segment (batch i has sequence number seg + i). Duplicates of queued
   * or committed batches are dropped (they stay settled through the first copy).
   */
  add(seg: number, batches: Array<{ id: string; bytes: Uint8Array }>, committed: (id: string) => boolean): void {
    let live = 0;
    const now = Date.now();
    batches.forEach((b, i) => {
      if (this.#queued.has(b.id) || committed(b.id)) return;
      this.#queued.add(b.id);
      this.queue.push({ seq: seg + i, seg, id: b.id, bytes: b.bytes, acceptedAt: now });
      live++;
    });
    if (live) this.#segments.set(seg, live);
    else this.#dropLater([seg]);
  }

  /** The batches of a durable block or verdict leave the queue, and emptied segments the pending pool. */
  settle(entries: PoolEntry[]): void {
    if (entries.length === 0) return;
    const done = new Set<string>();
    for (const e of entries) done.add(e.id);
    let w = 0;
    for (const e of this.queue) if (!done.has(e.id)) this.queue[w++] = e;
    this.queue.length = w;
    for (const id of done) this.#queued.delete(id);
    const emptied: number[] = [];
    for (const entry of entries) {
      if (entry.seg < 0) continue;
      const left = (this.#segments.get(entry.seg) ?? 1) - 1;
      if (left > 0) this.#segments.set(entry.seg, left);
      else {
        this.#segments.delete(entry.seg);
        emptied.push(entry.seg);
      }
    }
    if (emptied.length) this.#dropLater(emptied);
  }

  /** Queues settled segments for the next grouped removal. */
  #dropLater(segments: number[]): void {
    for (const seg of segments) this.#toDrop.push(seg);
    if (this.#toDrop.length >= DROP_GROUP) this.#flushDrops();
    else if (this.#dropTimer === null) {
      this.#dropTimer = setTimeout(() => this.#flushDrops(), DROP_INTERVAL_MS);
      this.#dropTimer.unref();
    }
  }

  #flushDrops(): void {
    if (this.#dropTimer !== null) clearTimeout(this.#dropTimer);
    this.#dropTimer = null;
    if (this.#toDrop.length === 0) return;
    void this.#drop(this.#toDrop.splice(0));
  }

  /** A block consumed `consumed` batches out of `poolLen` waiting: updates the rolling average. */
  noteBlock(consumed: number, poolLen: number): void {
    this.#average.note(consumed, poolLen);
  }

  #drop(segments: number[]): Promise<void> {
    const p = trackWrite(
      'the pending pool cleanup',
      this.pending.transaction(() => {
        for (const seg of segments) this.pending.remove(seg);
      }),
      'pending',
    )
      .then(
        () => undefined,
        (err: unknown) => this.opts.onDropFailed(err),
      )
      .finally(() => this.#drops.delete(p));
    this.#drops.add(p);
    return p;
  }

  /** Removes the settled segments still waiting, and resolves once the removals under way are done. */
  async close(): Promise<void> {
    this.#flushDrops();
    await Promise.all(this.#drops);
  }
}
