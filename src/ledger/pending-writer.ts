/**
 * The pending-pool writer of the HTTP thread: writes verified batches to the durable
 * pending pool (lmdb-js commits on its own writer thread), resolves once they are on disk,
 * then hands them to the committer. It also knows which batches are pending: acknowledged
 * (or being written) and not yet settled by the committer.
 */
import type { RootDatabase } from 'lmdb';
import { log } from '../log.js';
import { encodeSegment, segmentViews } from '../store/pending-pool.js';
import { faultPoint } from '../testing/faults.js';
import { writeFailure } from '../store/errors.js';
import { withinTime } from '../store/alarms.js';

/** Key of the record a recovery probe writes (segments have keys >= 0, the pool identity -1). */
const PROBE_KEY = -2;

/** Thrown when the batches could not be made durable: nothing was acknowledged. */
export class LedgerUnavailable extends Error {}

export interface PendingWriterOptions {
  db: RootDatabase<Buffer, number>;
  ackDurability: 'flush' | 'commit';
  /** Sequence number of the next segment (from the committer's recovery). */
  nextSeq: number;
  /** Batches found pending at start. */
  pendingIds: string[];
  /** Whether a batch is committed already (then it is not written again). */
  committed(id: string): boolean;
  /**
   * Hands a durable segment to the committer. The batches' bytes are views into one
   * buffer the writer no longer needs: `transfer` lists it, to be moved, not copied.
   */
  enqueue(seg: number, batches: Array<{ id: string; bytes: Uint8Array }>, transfer: ArrayBuffer[]): void;
  /** Null while batches may be stored; else the message of the 503 (shutting down, a fault). */
  refusal(): string | null;
  /** A write failed or stalled: the storage error, for the ledger's alarm. */
  onFault(err: unknown): void;
  /** Longest a write may take to become durable before it counts as stalled (ms). */
  stallMs: number;
}

export class PendingWriter {
  readonly #o: PendingWriterOptions;
  /** Sequence number of the next pending-pool segment. */
  #nextSeq: number;
  /** Ids in the durable pending pool, as the committer has acknowledged them. */
  readonly #pending = new Set<string>();
  /**
   * Durability of the pending-pool writes in progress, by batch id: a copy of a batch
   * submitted while its first copy is being written waits for that same write, so that
   * no 202 is sent before the batch is on disk.
   */
  readonly #writing = new Map<string, Promise<void>>();
  readonly #fault = faultPoint('pending.write');

  constructor(opts: PendingWriterOptions) {
    this.#o = opts;
    this.#nextSeq = opts.nextSeq;
    for (const id of opts.pendingIds) this.#pending.add(id);
  }

  /** Batches acknowledged (or being written) and not yet settled. */
  get size(): number {
    return this.#pending.size;
  }

  has(id: string): boolean {
    return this.#pending.has(id);
  }

  isWriting(id: string): boolean {
    return this.#writing.has(id);
  }

  /** The committer settled `id` (committed or invalid). */
  settle(id: string): void {
    this.#pending.delete(id);
  }

  /**
   * Writes verified batches to the pending pool, resolves once they are durable, then
   * hands them to the committer. The acknowledgement never waits for the committer's
   * event loop, which may be busy executing a block. Batches already pending or committed
   * are skipped; a copy of a batch whose write is still in progress waits for that write.
   * Throws LedgerUnavailable when the write fails (nothing is acknowledged then).
   */
  async persist(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    const refused = this.#o.refusal();
    if (refused !== null) throw new LedgerUnavailable(refused);
    const seen = new Set<string>();
    let earlier: Array<Promise<void>> | undefined;
    const fresh = batches.filter((b) => {
      if (seen.has(b.id)) return false;
      seen.add(b.id);
      const w = this.#writing.get(b.id);
      if (w) {
        earlier ??= [];
        earlier.push(w);
      }
      return !w && !this.#pending.has(b.id) && !this.#o.committed(b.id);
    });
    if (fresh.length > 0) await Promise.all([this.#writeSegment(fresh), ...(earlier ?? [])]);
    else if (earlier) await Promise.all(earlier);
  }

  #writeSegment(fresh: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    const seg = this.#nextSeq;
    this.#nextSeq += fresh.length;
    // Reserve the ids now so that a concurrent copy is not written twice (it waits for this write).
    for (const b of fresh) this.#pending.add(b.id);
    const db = this.#o.db;
    let record: Buffer | undefined;
    const write = (async (): Promise<void> => {
      try {
        if (this.#fault) {
          if (this.#fault.delayMs) await new Promise((r) => setTimeout(r, this.#fault!.delayMs));
          this.#fault.check();
        }
        record = encodeSegment(fresh);
        // A write that never settles (lmdb-js after a failed commit, a hung device) must
        // still get its request an answer: past the limit it counts as failed (503).
        await withinTime(db.put(seg, record), this.#o.stallMs, 'a pending-pool write');
        if (this.#o.ackDurability === 'flush') await withinTime(db.flushed, this.#o.stallMs, 'a pending-pool sync');
      } catch (err) {
        for (const b of fresh) this.#pending.delete(b.id);
        const cause = await writeFailure(err);
        log.error(`pending pool write failed: ${cause.message}`);
        this.#o.onFault(cause);
        throw new LedgerUnavailable(`The batches could not be stored in the pending pool: ${cause.message}`);
      } finally {
        for (const b of fresh) this.#writing.delete(b.id);
      }
      // The committer gets the record's own bytes: one buffer moved to its thread, not a
      // copy per batch. The record is written by now (lmdb-js holds it until the commit).
      const views = segmentViews(record);
      this.#o.enqueue(
        seg,
        fresh.map((b, i) => ({ id: b.id, bytes: views[i]! })),
        [record.buffer as ArrayBuffer],
      );
    })();
    for (const b of fresh) this.#writing.set(b.id, write);
    return write;
  }

  /** Resolves once every write in progress has settled (at most `ms`). */
  async drain(ms: number): Promise<void> {
    const writes = [...new Set(this.#writing.values())].map((w) => w.catch(() => undefined));
    await withinTime(Promise.all(writes), ms, 'pending-pool writes in progress').catch(() => undefined);
  }

  /**
   * A restarted committer recovered the pool from disk: these are the batches pending now
   * (with those still being written) and the next free sequence number.
   */
  reset(pendingIds: readonly string[], nextSeq: number): void {
    this.#pending.clear();
    for (const id of pendingIds) this.#pending.add(id);
    for (const id of this.#writing.keys()) this.#pending.add(id);
    if (nextSeq > this.#nextSeq) this.#nextSeq = nextSeq;
  }

  /** One small durable write: resolves when the pool's file takes writes again, else throws. */
  async probe(): Promise<void> {
    const db = this.#o.db;
    await withinTime(db.put(PROBE_KEY, Buffer.from(String(Date.now()))), this.#o.stallMs, 'a pending-pool probe write');
    await withinTime(db.flushed, this.#o.stallMs, 'a pending-pool probe sync');
  }

  close(): Promise<void> {
    return this.#o.db.close();
  }
}
