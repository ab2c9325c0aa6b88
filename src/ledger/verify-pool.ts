/**
 * The verify pool: signature and structure checks of submitted bodies in piscina workers,
 * micro-batched. Bodies queue up while every worker is busy and go out together when one
 * finishes; each task's verdicts are handed back as one chunk, so what follows (the
 * pending-pool write) is also done once per chunk, not once per body.
 */
import { Piscina } from 'piscina';
import type { VerifyResult } from './verify.js';
import type { VerifyReply, VerifyTask, VerifyWorkerData } from './protocol.js';
import { workerFile, workerStart } from './worker-file.js';

/** Bodies verified per piscina task at most; larger flushes are split across workers. */
const MAX_BODIES_PER_TASK = 64;
/**
 * Verification tasks in flight per pool thread. New bodies wait while every worker is
 * busy and go out together when one finishes: under load each task carries many bodies
 * (the per-task cost, ~25 µs here and ~15 µs in the worker, is paid once for all), while a
 * lone request is still sent at once. Watch: submit p99 and bodies per task.
 */
const TASKS_PER_THREAD = 1;

/**
 * The flags a pool thread starts with (undefined: the process's, as Node gives them to a
 * thread). piscina loads its task file with `require()` first, and on a Node that can
 * `require()` ES modules (20.19 and later) that goes through V8's synchronous module
 * instantiation, which aborts the whole process (a V8 fatal error, "IsGraphAsync must be used
 * on an instantiated module") when the pool is closed while a thread is still loading: a node
 * stopped within a second of its start died by SIGABRT. With require() of ES modules off in
 * the thread, piscina imports the file, and a thread ended while it loads just ends.
 *
 * A thread given a list gets only that list: Node refuses per-process flags in it (`npm
 * start`'s --initial-old-space-size), which apply to every thread anyway, and the entry
 * from the sources registers its own loader where it has none (workers/dev-verify.mjs).
 */
export function verifyThreadFlags(): string[] | undefined {
  const base = workerStart().execArgv;
  if ((process.features as { require_module?: boolean }).require_module !== true) return base;
  return [...(base ?? []), '--no-experimental-require-module'];
}

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

/** A body checked against another family list than the pool's (see verifyBodies). */
interface SideItem {
  body: Uint8Array;
  families: string[];
  resolve(r: VerifyResult): void;
  reject(err: unknown): void;
}

export class VerifyPool<T extends VerifyItem> {
  readonly #pool: Piscina;
  readonly #opts: VerifyPoolOptions<T>;
  #queued: T[] = [];
  /** Bodies of verifyBodies calls waiting for a worker, micro-batched as pushed bodies are. */
  #side: SideItem[] = [];
  #flushScheduled = false;
  #tasksInFlight = 0;

  constructor(opts: VerifyPoolOptions<T>) {
    this.#opts = opts;
    this.#pool = new Piscina({
      filename: workerFile('verify'),
      execArgv: verifyThreadFlags(),
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
    if (this.#flushScheduled || (this.#queued.length === 0 && this.#side.length === 0) || this.#tasksInFlight >= this.#maxTasks()) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    let free = this.#maxTasks() - this.#tasksInFlight;
    // Other ledgers' bodies take one task per flush, so that neither kind waits on the other for long.
    if (free > 0 && this.#side.length > 0) {
      void this.#runSide(this.#side.splice(0, MAX_BODIES_PER_TASK));
      free--;
    }
    if (free <= 0 || this.#queued.length === 0) return;
    const per = Math.min(MAX_BODIES_PER_TASK, Math.ceil(this.#queued.length / free));
    for (let t = 0; t < free && this.#queued.length > 0; t++) void this.#run(this.#queued.splice(0, per));
  }

  async #run(items: T[]): Promise<void> {
    // The bodies go to the worker packed in one buffer that is moved, not copied, and come
    // back the same way (the pending-pool write needs them): one transfer per task, where a
    // transfer per body cost more on the HTTP thread than the copy does.
    const { packed, ends } = pack(items.map((i) => i.body));
    const task: VerifyTask = { packed, ends, nodeKeyOnly: items.map((i) => i.nodeKeyOnly) };
    let results: VerifyResult[];
    this.#tasksInFlight++;
    try {
      const reply = (await this.#pool.run(task, { transferList: [packed] })) as VerifyReply;
      results = reply.results;
      // Same order as sent: each item gets a view of its own bytes in the returned buffer.
      let start = 0;
      items.forEach((item, k) => {
        const end = ends[k] as number;
        item.body = Buffer.from(reply.packed, start, end - start);
        start = end;
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
   * verdict per body, in order. The bodies join the pool's micro-batching: bodies of calls
   * made while the workers are busy go out together, one task per family list (a task per
   * call cost the HTTP thread more than the checks did). The caller keeps its bodies.
   */
  verifyBodies(bodies: readonly Uint8Array[], families: string[]): Promise<VerifyResult[]> {
    if (bodies.length === 0) return Promise.resolve([]);
    const verdicts = bodies.map(
      (body) =>
        new Promise<VerifyResult>((resolve, reject) => {
          this.#side.push({ body, families, resolve, reject });
        }),
    );
    this.#maybeFlush();
    return Promise.all(verdicts);
  }

  /** One task per family list among `items`. */
  async #runSide(items: SideItem[]): Promise<void> {
    const groups = new Map<string, SideItem[]>();
    for (const i of items) {
      const key = i.families.join('\u0000');
      const g = groups.get(key);
      if (g) g.push(i);
      else groups.set(key, [i]);
    }
    // One piscina task per group: each counts against the tasks in flight.
    const tasks = groups.size;
    this.#tasksInFlight += tasks;
    try {
      await Promise.all(
        [...groups.values()].map(async (g) => {
          const { packed, ends } = pack(g.map((i) => i.body));
          const task: VerifyTask = { packed, ends, nodeKeyOnly: g.map(() => undefined), families: g[0]?.families };
          try {
            const reply = (await this.#pool.run(task, { transferList: [packed] })) as VerifyReply;
            g.forEach((item, k) => {
              const r = reply.results[k];
              if (r) item.resolve(r);
              else item.reject(new Error('the verify worker gave no verdict'));
            });
          } catch (err) {
            for (const item of g) item.reject(err);
          }
        }),
      );
    } finally {
      this.#tasksInFlight -= tasks;
      this.#maybeFlush();
    }
  }

  /** Piscina's utilization: the share of the threads' time spent on tasks since start (0..1). */
  get utilization(): number {
    return this.#pool.utilization;
  }

  destroy(): Promise<void> {
    return this.#pool.destroy();
  }
}

/** Bodies back to back in one new buffer, and where each ends in it. */
function pack(bodies: readonly Uint8Array[]): { packed: ArrayBuffer; ends: number[] } {
  let total = 0;
  for (const b of bodies) total += b.byteLength;
  const out = new Uint8Array(total);
  const ends = new Array<number>(bodies.length);
  let o = 0;
  bodies.forEach((b, k) => {
    out.set(b, o);
    o += b.byteLength;
    ends[k] = o;
  });
  return { packed: out.buffer, ends };
}
