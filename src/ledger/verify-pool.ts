/**
 * The verify pool: signature and structure checks of submitted bodies in piscina workers,
 * micro-batched. Bodies queue up while every worker is busy and go out together when one
 * finishes; each task's verdicts are handed back as one chunk, so what follows (the
 * pending-pool write) is also done once per chunk, not once per body.
 */
import { Piscina } from 'piscina';
import type { VerifyResult } from './verify.js';
import type { VerifyReply, VerifyTask, VerifyWorkerData } from './protocol.js';
import { workerFile } from './worker-file.js';

/** Bodies verified per piscina task at most; larger flushes are split across workers. */
const MAX_BODIES_PER_TASK = 64;
/**
 * Verification tasks in flight per pool thread. New bodies wait while every worker is
 * busy and go out together when one finishes: under load each task carries many bodies
 * (the per-task cost, ~25 µs here and ~15 µs in the worker, is paid once for all), while a
 * lone request is still sent at once. Watch: submit p99 and bodies per task.
 */
const TASKS_PER_THREAD = 1;

export interface VerifyItem {
  body: Uint8Array;
  /** When set, the body must contain a batch signed by this key (queue-full exemption). */
  nodeKeyOnly: string | undefined;
}

export interface VerifyPoolOptions<T extends VerifyItem> {
  threads: number;
  /** Families the ledger accepts (given to each worker once). */
  families: string[];
  /** A task's items with their verdicts, in order. */
  onVerified(items: T[], results: VerifyResult[]): void;
  /** A task failed as a whole (the worker threw). */
  onFailed(items: T[], err: unknown): void;
}

export class VerifyPool<T extends VerifyItem> {
  readonly #pool: Piscina;
  readonly #opts: VerifyPoolOptions<T>;
  #queued: T[] = [];
  #flushScheduled = false;
  #tasksInFlight = 0;

  constructor(opts: VerifyPoolOptions<T>) {
    this.#opts = opts;
    this.#pool = new Piscina({
      filename: workerFile('verify'),
      minThreads: opts.threads,
      maxThreads: opts.threads,
      idleTimeout: 60_000,
      workerData: { families: opts.families } satisfies VerifyWorkerData,
    });
  }

  /** Queues a body; its verdict comes back through onVerified with the rest of its task. */
  push(item: T): void {
    this.#queued.push(item);
    this.#maybeFlush();
  }

  #maxTasks(): number {
    return (this.#pool.threads.length || 1) * TASKS_PER_THREAD;
  }

  /** Sends queued bodies on the next turn when a worker is free (same-turn arrivals go together). */
  #maybeFlush(): void {
    if (this.#flushScheduled || this.#queued.length === 0 || this.#tasksInFlight >= this.#maxTasks()) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    const free = this.#maxTasks() - this.#tasksInFlight;
    if (free <= 0 || this.#queued.length === 0) return;
    const per = Math.min(MAX_BODIES_PER_TASK, Math.ceil(this.#queued.length / free));
    for (let t = 0; t < free && this.#queued.length > 0; t++) void this.#run(this.#queued.splice(0, per));
  }

  async #run(items: T[]): Promise<void> {
    // The bodies go to the worker by transfer, not by copy, and come back the same way
    // (the pending-pool write needs them). A body that does not own its whole buffer (a
    // view into a larger one) is copied as before.
    const transferList: ArrayBuffer[] = [];
    const moved = new Set<ArrayBufferLike>();
    const bodies = items.map((i) => {
      const b = i.body;
      if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer && !moved.has(b.buffer)) {
        moved.add(b.buffer);
        transferList.push(b.buffer);
      }
      return b;
    });
    const task: VerifyTask = { bodies, nodeKeyOnly: items.map((i) => i.nodeKeyOnly) };
    let results: VerifyResult[];
    this.#tasksInFlight++;
    try {
      const reply = (await this.#pool.run(task, { transferList })) as VerifyReply;
      results = reply.results;
      // Same order as sent: each item gets its own bytes back (the sent view is detached now).
      items.forEach((item, k) => {
        const b = reply.bodies[k];
        if (b) item.body = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
      });
    } catch (err) {
      this.#opts.onFailed(items, err);
      return;
    } finally {
      this.#tasksInFlight--;
      this.#maybeFlush();
    }
    this.#opts.onVerified(items, results);
  }

  /**
   * Verifies bodies against another family list than the pool's (a circuit ledger's), one
   * verdict per body, in order. Not micro-batched with push(): the bodies are split over
   * the threads at once. Bodies are copied to the workers (the caller keeps them); a view
   * into a larger buffer is copied alone first, so the whole buffer is never cloned.
   */
  async verifyBodies(bodies: readonly Uint8Array[], families: string[]): Promise<VerifyResult[]> {
    if (bodies.length === 0) return [];
    const own = bodies.map((b) => (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : new Uint8Array(b)));
    const per = Math.min(MAX_BODIES_PER_TASK, Math.ceil(own.length / (this.#pool.threads.length || 1)));
    const tasks: Array<Promise<VerifyReply>> = [];
    for (let i = 0; i < own.length; i += per) {
      const chunk = own.slice(i, i + per);
      const task: VerifyTask = { bodies: chunk, nodeKeyOnly: chunk.map(() => undefined), families };
      tasks.push(this.#pool.run(task) as Promise<VerifyReply>);
    }
    return (await Promise.all(tasks)).flatMap((r) => r.results);
  }

  /** Piscina's utilization: the share of the threads' time spent on tasks since start (0..1). */
  get utilization(): number {
    return this.#pool.utilization;
  }

  destroy(): Promise<void> {
    return this.#pool.destroy();
  }
}
