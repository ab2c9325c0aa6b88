/**
 * The committer client: starts the ledger's committer thread (or hands its ledger to a spare
 * thread started ahead), waits for its recovery, passes durable segments to it and its block
 * events and faults back. All traffic is messages (protocol.ts).
 */
import { resolve as resolvePath } from 'node:path';
import { Worker } from 'node:worker_threads';
import { workerFile, workerStart } from './worker-file.js';
import {
  isPluginNews,
  type BlockEvent,
  type ClientTraffic,
  type CommitterFaultCode,
  type CommitterOptions,
  type FromCommitter,
  type PluginNews,
  type ToCommitter,
} from './protocol.js';

/** What the committer says of transaction processors: their families, and the batches that wait on one. */
export type ProcessorsMessage = Extract<FromCommitter, { type: 'processors' | 'set-aside' }>;

export type CommitterReady = Extract<FromCommitter, { type: 'ready' }>;

export interface CommitterHandlers {
  onBlock(e: BlockEvent): void;
  /** A message from a client of the external executor's endpoint, or its departure. */
  onClient?(m: ClientTraffic): void;
  /** The external executor's processors changed, or batches wait on one (see ProcessorsMessage). */
  onProcessors?(m: ProcessorsMessage): void;
  /** A plug-in's message (a circuit's round summarized for its agreement, or given up: src/scabbard). */
  onPlugin?(m: PluginNews): void;
  /** The committer stopped: `reason` says why, for the fault report. */
  onFault(reason: string, code: CommitterFaultCode | 'THREAD_FAILED' | 'THREAD_EXITED'): void;
}

/**
 * A committer thread started ahead of need: it loads its modules (most of a thread's start:
 * over a second on a loaded two-core machine) and waits, holding nothing, until it is given a
 * ledger to run. The ledger keeps one, so that the recovery from a failed write starts its
 * new committer without that wait. It does not keep the process alive.
 */
export class SpareThread {
  #worker: Worker | null;

  constructor() {
    const w = new Worker(workerFile('committer'), { ...workerStart(), workerData: { standby: true } });
    w.unref();
    // A spare that failed or ended is not used (and its error is not an error of the node).
    const gone = (): void => {
      if (this.#worker === w) this.#worker = null;
    };
    w.on('error', gone);
    w.once('exit', gone);
    this.#worker = w;
  }

  /** The thread, ready to be told its ledger, or null when it is gone; the spare is used up. */
  take(): Worker | null {
    const w = this.#worker;
    this.#worker = null;
    w?.ref();
    return w;
  }

  async close(): Promise<void> {
    const w = this.take();
    await w?.terminate();
  }
}

/**
 * The process's spare committer thread, shared by all its ledgers (a node's own and each of
 * its circuits'): one idle thread whatever the number of ledgers, rather than one per ledger
 * (each ~0.6 s of CPU to start and an isolate's memory, idle). A ledger's recovery takes it;
 * the next is started after that recovery. It is ended when the last ledger that joined
 * leaves.
 */
export class SpareHolder {
  #spare: SpareThread | null = null;
  #ledgers = 0;
  #lastBlockAt = 0;

  /** A ledger that may need the spare; the function it is given leaves (once). */
  join(): () => Promise<void> {
    this.#ledgers++;
    let left = false;
    return async () => {
      if (left) return;
      left = true;
      if (--this.#ledgers > 0) return;
      const spare = this.take();
      await spare?.close();
    };
  }

  /** Starts the spare when there is none and a ledger has joined. */
  ensure(): void {
    if (this.#ledgers > 0 && !this.#spare) this.#spare = new SpareThread();
  }

  /** The spare, for a committer's start (null when there is none); the holder has none after. */
  take(): SpareThread | null {
    const s = this.#spare;
    this.#spare = null;
    return s;
  }

  /** A block was committed by one of the ledgers. */
  blockCommitted(): void {
    this.#lastBlockAt = Date.now();
  }

  /** When any ledger of the process last committed a block (Date.now(); 0 before the first). */
  get lastBlockAt(): number {
    return this.#lastBlockAt;
  }

  /** Whether a spare is started (tests). */
  get started(): boolean {
    return this.#spare !== null;
  }
}

/** The process's spare committer thread. */
export const spares = new SpareHolder();

/** A committer that failed to start. */
export class CommitterStartError extends Error {
  constructor(
    readonly code: CommitterFaultCode,
    message: string,
  ) {
    super(message);
  }
}

export class CommitterClient {
  /** The committer threads of this process that run, with their data directory. */
  static readonly #running = new Map<CommitterClient, string>();
  readonly #worker: Worker;
  #closed = false;
  #exited = false;

  private constructor(worker: Worker, h: CommitterHandlers, dataDir: string) {
    this.#worker = worker;
    CommitterClient.#running.set(this, resolvePath(dataDir));
    worker.once('exit', () => CommitterClient.#running.delete(this));
    worker.on('message', (m: FromCommitter) => {
      if (m.type === 'block') h.onBlock(m);
      else if (m.type === 'fatal') h.onFault(`committer: ${m.message}`, m.code);
      else if (m.type === 'client' || m.type === 'client-gone') h.onClient?.(m);
      else if (m.type === 'processors' || m.type === 'set-aside') h.onProcessors?.(m);
      else if (isPluginNews(m)) h.onPlugin?.(m);
    });
    worker.on('error', (err) => h.onFault(`committer thread failed: ${err instanceof Error ? err.message : String(err)}`, 'THREAD_FAILED'));
    worker.on('exit', (code) => {
      this.#exited = true;
      if (!this.#closed) h.onFault(`committer thread exited (code ${code})`, 'THREAD_EXITED');
    });
  }

  /**
   * Starts the thread and resolves once it has recovered (head, pending batches). The
   * handlers are attached only then: a start failure rejects instead.
   */
  static async start(
    opts: CommitterOptions,
    handlers: () => CommitterHandlers,
    spare?: SpareThread | null,
  ): Promise<{ client: CommitterClient; ready: CommitterReady }> {
    const ahead = spare?.take() ?? null;
    const worker = ahead ?? new Worker(workerFile('committer'), { ...workerStart(), workerData: opts });
    if (ahead) ahead.postMessage({ type: 'begin', opts } satisfies ToCommitter);
    const ready = await new Promise<CommitterReady>((resolve, reject) => {
      const onMsg = (m: FromCommitter): void => {
        if (m.type === 'ready') {
          worker.off('message', onMsg);
          resolve(m);
        } else if (m.type === 'fatal') {
          reject(new CommitterStartError(m.code, m.message));
        }
      };
      worker.on('message', onMsg);
      worker.once('error', reject);
    }).catch(async (err: unknown) => {
      await worker.terminate();
      throw err;
    });
    return { client: new CommitterClient(worker, handlers(), opts.dataDir), ready };
  }

  /** `transfer`: buffers the batches' bytes live in, moved to the committer (unusable here afterwards). */
  enqueue(seg: number, batches: Array<{ id: string; bytes: Uint8Array }>, transfer: ArrayBuffer[] = []): void {
    this.#worker.postMessage({ type: 'enqueue', seg, batches } satisfies ToCommitter, transfer);
  }

  /** A message of a plug-in (a circuit's agreement or intake, a shared log's envelopes; see ToCommitter). */
  tell(m: ToCommitter): void {
    if (!this.#closed) this.#worker.postMessage(m);
  }

  /** An envelope for a client of the external executor's endpoint. */
  sendClient(peer: string, body: Uint8Array): void {
    if (!this.#closed) this.#worker.postMessage({ type: 'client-send', peer, body } satisfies ToCommitter);
  }

  /**
   * Ends every committer thread of this process on the environment of `dataDir` (a circuit's
   * shares the node's); resolves with whether they all are gone within `ms`. Each owner is told (THREAD_EXITED) and
   * starts a new one by its own recovery. For an environment that must be closed by every
   * thread before it can be opened again (src/store/reopen.ts).
   */
  static async endAll(dataDir: string, ms = 2_000): Promise<boolean> {
    const on = [...CommitterClient.#running].filter(([, dir]) => dir === resolvePath(dataDir)).map(([c]) => c);
    for (const c of on) void c.#worker.terminate();
    const ended = await Promise.all(on.map((c) => c.ended(ms)));
    return ended.every(Boolean);
  }

  /**
   * Resolves with true once the thread has ended (its handles on the environments closed with
   * it), or false after `ms`. For a thread being replaced: `close` resolves when the thread
   * says it is done, which may be a moment before it is gone.
   */
  ended(ms = 2_000): Promise<boolean> {
    if (this.#exited) return Promise.resolve(true);
    const w = this.#worker;
    return new Promise<boolean>((resolve) => {
      // Past `ms` the thread is told to end, but not waited for: a thread whose storage
      // library hangs in its exit (see STUCK in src/store/write-errors.ts) never ends.
      const t = setTimeout(() => {
        void w.terminate();
        resolve(false);
      }, ms);
      w.once('exit', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** Asks the thread to finish the blocks in flight and stop; ends it after `ms` (10 s) at the latest. */
  close(ms = 10_000): Promise<void> {
    this.#closed = true;
    // A thread already gone (a recovery ends a failed one): nothing to wait for.
    if (this.#exited) return Promise.resolve();
    const w = this.#worker;
    return new Promise<void>((resolve) => {
      // Past `ms` the thread is ended; its end is waited for a moment, not for ever (see `ended`).
      const t = setTimeout(() => {
        const moment = new Promise<void>((r) => setTimeout(r, 1_000).unref());
        void Promise.race([w.terminate(), moment]).then(() => resolve());
      }, ms);
      w.on('message', (m: FromCommitter) => {
        if (m.type === 'closed') {
          clearTimeout(t);
          resolve();
        }
      });
      w.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      w.postMessage({ type: 'shutdown' } satisfies ToCommitter);
    });
  }
}
