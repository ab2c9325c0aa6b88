/**
 * The batch generator of `cairn bench`: worker threads sign ranges of the run's batches
 * (workers/bench-sign.ts) into a queue ahead of the clock, in order, so the sending loop only
 * takes bytes. Before the run it measures its own capacity (batches signed per second with
 * every worker busy), which the report prints beside the ledger's rate: a generator slower
 * than the ledger would make a slow client look like a slow ledger.
 */
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { workerFile, workerStart } from '../ledger/worker-file.js';
import type { SignedChunk, WorkloadSpec } from './workload.js';

export interface Batch {
  /** The ids of the batches in the body (one for generated batches; a payload list may hold several). */
  ids: string[];
  body: Uint8Array;
}

export interface BatchSource {
  /** A batch now, or undefined when none is ready (or none is left: see `done`). */
  take(): Batch | undefined;
  /** Resolves once a batch is ready or none is left. */
  ready(): Promise<void>;
  readonly done: boolean;
  /** Batches the source still owes. */
  readonly total: number;
  close(): Promise<void>;
}

const CHUNK = 250;

let generators = 0;

/** The signing threads, started once for all the runs of a `cairn bench` (each start loads the code). */
export class SignerPool {
  readonly workers: Worker[];
  constructor(n = 0) {
    const count = n > 0 ? n : Math.max(1, availableParallelism());
    this.workers = Array.from({ length: count }, () => new Worker(workerFile('bench-sign'), workerStart()));
  }
  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

export class Generator implements BatchSource {
  readonly #spec: WorkloadSpec;
  readonly total: number;
  readonly #workers: Worker[] = [];
  readonly #idle: Worker[] = [];
  #ahead: number;
  readonly #queue: Batch[] = [];
  #head = 0;
  /** Signed chunks that arrived before an earlier one, by start. */
  readonly #early = new Map<number, Batch[]>();
  /** The next batch index to hand to a worker, and the next to release into the queue. */
  #nextStart = 0;
  #nextRelease = 0;
  #waiters: Array<() => void> = [];
  #failure: Error | undefined;
  #closed = false;
  readonly #id = ++generators;
  readonly #detach: Array<() => void> = [];

  /** `total` batches (Infinity: as many as asked), with up to `ahead` signed before they are taken, by the pool's threads. */
  constructor(spec: WorkloadSpec, total: number, ahead: number, pool: SignerPool) {
    this.#spec = spec;
    this.total = total;
    this.#ahead = Math.max(CHUNK, ahead);
    for (const w of pool.workers) {
      const onMessage = (m: SignedChunk & { tag?: string; gen?: number }): void => {
        // A reply for an earlier generator of the pool (a chunk it no longer wanted) is dropped.
        if (m.gen !== this.#id) return;
        if (m.tag === 'measure') this.#onMeasured(w);
        else this.#onChunk(w, m);
      };
      const onError = (err: Error): void => this.#fail(err);
      w.on('message', onMessage);
      w.on('error', onError);
      this.#detach.push(() => {
        w.off('message', onMessage);
        w.off('error', onError);
      });
      this.#workers.push(w);
      this.#idle.push(w);
    }
  }

  get done(): boolean {
    return this.#nextRelease >= this.total && this.#head >= this.#queue.length;
  }

  get queued(): number {
    return this.#queue.length - this.#head;
  }

  #starts = new Map<Worker, number>();

  #onChunk(w: Worker, chunk: SignedChunk): void {
    const start = this.#starts.get(w) as number;
    const batches: Batch[] = chunk.ids.map((id, k) => ({
      ids: [id],
      body: chunk.bytes.subarray(chunk.offsets[k] as number, chunk.offsets[k + 1] as number),
    }));
    this.#early.set(start, batches);
    for (let b = this.#early.get(this.#nextRelease); b !== undefined; b = this.#early.get(this.#nextRelease)) {
      this.#early.delete(this.#nextRelease);
      this.#nextRelease += b.length;
      for (const x of b) this.#queue.push(x);
    }
    this.#idle.push(w);
    this.#wake();
    this.#dispatch();
  }

  #measuring: (() => void) | undefined;

  #onMeasured(w: Worker): void {
    this.#idle.push(w);
    this.#measuring?.();
  }

  /**
   * The generator's capacity: batches of the run's shape signed per second with every worker
   * busy, over `n` throwaway batches (after a first small round that loads the workers' code).
   */
  async measure(n: number): Promise<number> {
    const spec = { ...this.#spec, prefix: `${this.#spec.prefix}cap` };
    const round = async (count: number): Promise<void> => {
      let given = 0;
      let back = 0;
      let chunks = 0;
      await new Promise<void>((resolve, reject) => {
        const step = (): void => {
          if (this.#failure) return reject(this.#failure);
          while (this.#idle.length > 0 && given < count) {
            const w = this.#idle.pop() as Worker;
            const c = Math.min(CHUNK, count - given);
            w.postMessage({ spec, start: given, count: c, tag: 'measure', gen: this.#id });
            given += c;
            chunks++;
          }
          if (back === chunks && given >= count) resolve();
        };
        this.#measuring = () => {
          back++;
          step();
        };
        this.#waiters.push(() => step());
        step();
      });
      this.#measuring = undefined;
    };
    await round(this.#workers.length * 20);
    const t0 = performance.now();
    await round(n);
    return n / ((performance.now() - t0) / 1000);
  }

  get workers(): number {
    return this.#workers.length;
  }

  #fail(err: Error): void {
    this.#failure = new Error(`the batch generator failed: ${err.message}`);
    this.#wake();
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  #dispatch(): void {
    if (this.#closed) return;
    if (this.#head > 10_000) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
    while (this.#idle.length > 0 && this.#nextStart < this.total && this.#nextStart - this.#nextRelease + this.queued < this.#ahead) {
      const w = this.#idle.pop() as Worker;
      const count = Math.min(CHUNK, this.total - this.#nextStart);
      this.#starts.set(w, this.#nextStart);
      w.postMessage({ spec: this.#spec, start: this.#nextStart, count, gen: this.#id });
      this.#nextStart += count;
    }
  }

  /** Signs until `n` batches are queued (and keeps up to `n` ahead from then on); returns the batches signed per second meanwhile. */
  async fill(n: number): Promise<number> {
    this.#ahead = Math.max(CHUNK, n);
    const t0 = performance.now();
    const before = this.#nextRelease;
    this.#dispatch();
    const want = Math.min(n, this.total);
    while (this.queued < want && !this.done) {
      await new Promise<void>((r) => this.#waiters.push(r));
      if (this.#failure) throw this.#failure;
    }
    const secs = (performance.now() - t0) / 1000;
    return secs > 0 ? (this.#nextRelease - before) / secs : 0;
  }

  take(): Batch | undefined {
    if (this.#failure) throw this.#failure;
    if (this.#head >= this.#queue.length) return undefined;
    const b = this.#queue[this.#head++];
    this.#dispatch();
    return b;
  }

  async ready(): Promise<void> {
    if (this.#failure) throw this.#failure;
    if (this.queued > 0 || this.done) return;
    this.#dispatch();
    await new Promise<void>((r) => this.#waiters.push(r));
    if (this.#failure) throw this.#failure;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#wake();
    for (const d of this.#detach) d();
  }
}

/** A fixed list of batches (from --payloads), sent once each in order. */
export class ListSource implements BatchSource {
  readonly #list: Batch[];
  #next = 0;
  constructor(list: Batch[]) {
    this.#list = list;
  }
  get total(): number {
    return this.#list.length;
  }
  get done(): boolean {
    return this.#next >= this.#list.length;
  }
  take(): Batch | undefined {
    return this.#list[this.#next++];
  }
  async ready(): Promise<void> {}
  async close(): Promise<void> {}
}
