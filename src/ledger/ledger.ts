/**
 * The ledger as the HTTP thread sees it: submission (back-pressure check, micro-batched
 * verification in the piscina pool, hand-off to the committer thread, 202 only once the
 * batch is on disk), batch statuses with commit-driven waiting, and read access to
 * blocks, indexes and state straight from LMDB.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { RootDatabase } from 'lmdb';
import type { Config } from '../config.js';
import type { Signer } from '../crypto/secp256k1.js';
import { log } from '../log.js';
import { MerkleTree } from '../state/merkle.js';
import { encodeSegment } from '../store/pending-pool.js';
import { openPendingEnv } from '../store/db.js';
import { openLedgerStores, HEAD_KEY, type ChainHead, type InvalidRecord, type LedgerStores } from '../store/ledger-stores.js';
import { faultPoint } from '../store/test-faults.js';
import { writeFailure } from '../store/errors.js';
import type { VerifyResult } from './verify.js';
import type { VerifyTask } from '../../workers/verify.js';
import type { BlockEvent, CommitterOptions, FromCommitter, ToCommitter } from './protocol.js';

export type BatchStatus = 'COMMITTED' | 'INVALID' | 'PENDING' | 'UNKNOWN';

export interface StatusEntry {
  id: string;
  status: BatchStatus;
  invalid_transactions: InvalidRecord['invalid_transactions'];
}

export type SubmitResult =
  | { ok: true; ids: string[] }
  /** UNAVAILABLE: the node cannot store batches now (a failed write, a fault, shutting down); retry later. */
  | { ok: false; code: 'EMPTY' | 'UNDECODABLE' | 'INVALID' | 'QUEUE_FULL' | 'UNAVAILABLE'; message: string };

/** Thrown by submitTrusted when the batches could not be made durable: nothing was acknowledged. */
export class LedgerUnavailable extends Error {}

interface QueuedBody {
  body: Uint8Array;
  nodeKeyOnly: string | undefined;
  /** Set when the body got past a full queue only as the node's own, unseen batches (checked after verification). */
  exemptOnly: boolean;
  resolve(r: SubmitResult): void;
  reject(e: unknown): void;
}

interface Waiter {
  remaining: Set<string>;
  done(): void;
}

/** Bodies verified per piscina task at most; larger flushes are split across workers. */
const MAX_BODIES_PER_TASK = 64;
/**
 * Verification tasks in flight per pool thread. New bodies wait while every worker is
 * busy and go out together when one finishes: under load each task carries many bodies
 * (the per-task cost, ~25 µs here and ~15 µs in the worker, is paid once for all), while a
 * lone request is still sent at once. Watch: submit p99 and bodies per task.
 */
const TASKS_PER_THREAD = 1;

const fromSource = import.meta.url.endsWith('.ts');

/**
 * Path of a worker entry. Running from TypeScript sources (tests, tsx), a small .mjs
 * entry registers the tsx loader inside the worker first: loader flags given to the
 * parent do not reliably apply to a worker's first module.
 */
const workerFile = (name: string): string =>
  fileURLToPath(new URL(`../../workers/${fromSource ? `dev-${name}.mjs` : `${name}.js`}`, import.meta.url));

/**
 * Number of batches in a BatchList body, by a scan of its top-level fields (no decoding,
 * no copies): what the queue limit counts before any signature work. A body that is not
 * a well-formed list counts as what was read so far, at least 1 (verification rejects it).
 */
export function countBatches(body: Uint8Array): number {
  let n = 0;
  let o = 0;
  const len = body.length;
  const varint = (): number => {
    let v = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (o >= len) return -1;
      const b = body[o++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
    return -1;
  };
  while (o < len) {
    const tag = varint();
    if (tag < 0) break;
    const wire = tag & 7;
    if (wire === 2) {
      const l = varint();
      if (l < 0 || o + l > len) break;
      o += l;
      if (tag >>> 3 === 1) n++;
    } else if (wire === 0) {
      if (varint() < 0) break;
    } else if (wire === 1) o += 8;
    else if (wire === 5) o += 4;
    else break;
  }
  return Math.max(1, n);
}

export class Ledger {
  readonly stores: LedgerStores;
  readonly tree: MerkleTree;
  readonly nodePublicKey: string;
  head: ChainHead;
  queueLimit: number;
  readonly #pool: Piscina;
  readonly #committer: Worker;
  readonly #nodeKeyBytes: Buffer;
  #queued: QueuedBody[] = [];
  #flushScheduled = false;
  #tasksInFlight = 0;
  /** Batches of submissions accepted past the limit check and not answered yet. */
  #inflight = 0;
  readonly #pendingDb: RootDatabase<Buffer, number>;
  readonly #ackDurability: 'flush' | 'commit';
  /** Sequence number of the next pending-pool segment. */
  #nextSeq: number;
  /** Ids in the durable pending pool, as the committer has acknowledged them. */
  readonly #pending = new Set<string>();
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #listeners = new Set<(e: BlockEvent) => void>();
  /**
   * Durability of the pending-pool writes in progress, by batch id: a copy of a batch
   * submitted while its first copy is being written waits for that same write, so that
   * no 202 is sent before the batch is on disk.
   */
  readonly #writing = new Map<string, Promise<void>>();
  readonly #pendingFault = faultPoint('pending.write');
  #fault: string | null = null;
  readonly #faultListeners = new Set<(reason: string) => void>();
  #closed = false;
  #backpressure = false;

  private constructor(
    stores: LedgerStores,
    pool: Piscina,
    committer: Worker,
    nodePublicKey: string,
    ready: { head: ChainHead; pendingIds: string[]; nextSeq: number; queueLimit: number },
    pendingDb: RootDatabase<Buffer, number>,
    ackDurability: 'flush' | 'commit',
  ) {
    this.stores = stores;
    // Reads served to clients are checked against the node hashes.
    this.tree = new MerkleTree(stores.merkle, { verify: true });
    this.#pool = pool;
    this.#committer = committer;
    this.nodePublicKey = nodePublicKey;
    this.#nodeKeyBytes = Buffer.from(nodePublicKey);
    this.head = ready.head;
    for (const id of ready.pendingIds) this.#pending.add(id);
    this.#nextSeq = ready.nextSeq;
    this.#pendingDb = pendingDb;
    this.#ackDurability = ackDurability;
    this.queueLimit = ready.queueLimit;
    committer.on('message', (m: FromCommitter) => this.#onMessage(m));
    committer.on('error', (err) => this.markFaulty(`committer thread failed: ${err instanceof Error ? err.message : String(err)}`));
    committer.on('exit', (code) => {
      if (!this.#closed) this.markFaulty(`committer thread exited (code ${code})`);
    });
  }

  /** Set once when the node can no longer guarantee its ledger: acknowledgements stop (503) and /status reports it. */
  get fault(): string | null {
    return this.#fault;
  }

  /** Idempotent; the first reason wins; logs one error line and tells the onFault listeners. */
  markFaulty(reason: string): void {
    if (this.#fault !== null) return;
    this.#fault = reason;
    log.error(`ledger fault, no more batches are accepted: ${reason}`);
    for (const l of this.#faultListeners) l(reason);
  }

  /** Called once, on the fault (the process entry ends the process then). */
  onFault(listener: (reason: string) => void): void {
    this.#faultListeners.add(listener);
  }

  static async start(opts: { config: Config; db: RootDatabase; nodeSigner: Signer; nodeKeyFile: string }): Promise<Ledger> {
    const { config } = opts;
    const committer = new Worker(workerFile('committer'), { workerData: {
      dataDir: config.dataDir,
      nodeKeyFile: opts.nodeKeyFile,
      maxBatchesPerBlock: config.maxBatchesPerBlock,
      minBlockIntervalMs: config.minBlockIntervalMs,
      queueMultiplier: config.queueMultiplier,
      queueInitialAverage: config.queueInitialAverage,
      dependencyWaitMs: config.dependencyWaitSec * 1000,
    } satisfies CommitterOptions });
    const ready = await new Promise<{ head: ChainHead; pendingIds: string[]; nextSeq: number; queueLimit: number }>((resolve, reject) => {
      const onMsg = (m: FromCommitter): void => {
        if (m.type === 'ready') {
          committer.off('message', onMsg);
          resolve(m);
        } else if (m.type === 'fatal') {
          reject(new Error(m.message));
        }
      };
      committer.on('message', onMsg);
      committer.once('error', reject);
    }).catch(async (err: unknown) => {
      await committer.terminate();
      throw err;
    });
    const pool = new Piscina({
      filename: workerFile('verify'),
      minThreads: config.poolThreads,
      maxThreads: config.poolThreads,
      idleTimeout: 60_000,
    });
    const ledger = new Ledger(
      openLedgerStores(opts.db),
      pool,
      committer,
      opts.nodeSigner.publicKey,
      ready,
      openPendingEnv(config.dataDir),
      config.ackDurability,
    );
    log.info(`chain head ${ready.head.blockNum} ${ready.head.blockId.slice(0, 16)}…, ${ready.pendingIds.length} pending batches`);
    return ledger;
  }

  onBlock(listener: (e: BlockEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #onMessage(m: FromCommitter): void {
    if (m.type === 'block') {
      this.stores.root.resetReadTxn();
      if (m.head) this.head = m.head;
      this.queueLimit = m.queueLimit;
      for (const id of m.committed) this.#settle(id);
      for (const id of m.invalid) this.#settle(id);
      for (const l of this.#listeners) l(m);
    } else if (m.type === 'fatal') {
      this.markFaulty(`committer: ${m.message}`);
    }
  }

  #settle(id: string): void {
    this.#pending.delete(id);
    const ws = this.#waiters.get(id);
    if (!ws) return;
    this.#waiters.delete(id);
    for (const w of ws) {
      w.remaining.delete(id);
      if (w.remaining.size === 0) w.done();
    }
  }

  /** Batches acknowledged and not yet settled. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** True when `batches` more would exceed the limit (checked before any signature work). */
  overLimit(batches = 1): boolean {
    return this.pendingCount + this.#inflight + batches > this.queueLimit;
  }

  /** Submits one POST /batches body. Resolves once every batch is durable in the pending pool. */
  submit(body: Uint8Array): Promise<SubmitResult> {
    if (this.#fault !== null) return Promise.resolve(this.#unavailable());
    let nodeKeyOnly: string | undefined;
    // The limit counts batches, not requests: one list of many must not slip in as one.
    const n = countBatches(body);
    if (this.overLimit(n)) {
      // Only the node's own batches are exempt, each one (checked after verification);
      // a body without the node's key anywhere is refused now.
      if (Buffer.from(body.buffer, body.byteOffset, body.byteLength).indexOf(this.#nodeKeyBytes) < 0) {
        this.#noteBackpressure(true);
        return Promise.resolve({ ok: false, code: 'QUEUE_FULL', message: 'queue full' });
      }
      nodeKeyOnly = this.nodePublicKey;
    } else {
      this.#noteBackpressure(false);
    }
    this.#inflight += n;
    return new Promise<SubmitResult>((resolve, reject) => {
      this.#queued.push({ body, nodeKeyOnly, exemptOnly: nodeKeyOnly !== undefined, resolve, reject });
      this.#maybeFlush();
    }).finally(() => {
      this.#inflight -= n;
    });
  }

  #faultMessage(): string {
    return `The node stopped accepting batches and is restarting: ${this.#fault}`;
  }

  #unavailable(): SubmitResult {
    return { ok: false, code: 'UNAVAILABLE', message: this.#faultMessage() };
  }

  /** Exempt from a full queue: signed by the node and neither pending, committed nor settled invalid. */
  #exempt(b: { id: string; signer: string }): boolean {
    return (
      b.signer === this.nodePublicKey &&
      !this.#pending.has(b.id) &&
      !this.#writing.has(b.id) &&
      !this.stores.batchIndex.doesExist(b.id) &&
      !this.stores.invalid.doesExist(b.id)
    );
  }

  #noteBackpressure(on: boolean): void {
    if (on === this.#backpressure) return;
    this.#backpressure = on;
    if (on) log.info(`applying back pressure: ${this.pendingCount} pending, limit ${this.queueLimit}`);
    else log.info('ending back pressure');
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
    for (let t = 0; t < free && this.#queued.length > 0; t++) void this.#verifyChunk(this.#queued.splice(0, per));
  }

  async #verifyChunk(items: QueuedBody[]): Promise<void> {
    const task: VerifyTask = { bodies: items.map((i) => i.body), nodeKeyOnly: items.map((i) => i.nodeKeyOnly) };
    let results: VerifyResult[];
    this.#tasksInFlight++;
    try {
      results = (await this.#pool.run(task)) as VerifyResult[];
    } catch (err) {
      for (const i of items) i.reject(err);
      return;
    } finally {
      this.#tasksInFlight--;
      this.#maybeFlush();
    }
    const batches: Array<{ id: string; bytes: Uint8Array }> = [];
    const accepted: Array<{ item: QueuedBody; ids: string[] }> = [];
    results.forEach((r, idx) => {
      const item = items[idx]!;
      if (!r.ok) return item.resolve(r);
      if (item.exemptOnly && !r.batches.every((b) => this.#exempt(b))) {
        return item.resolve({ ok: false, code: 'QUEUE_FULL', message: 'queue full' });
      }
      for (const b of r.batches) batches.push({ id: b.id, bytes: item.body.slice(b.start, b.end) });
      accepted.push({ item, ids: r.batches.map((b) => b.id) });
    });
    if (accepted.length === 0) return;
    try {
      await this.#persist(batches);
    } catch (err) {
      // Nothing of these bodies is acknowledged: each request gets the reason (503).
      const message = err instanceof LedgerUnavailable ? err.message : `The batches could not be stored: ${String(err)}`;
      for (const a of accepted) a.item.resolve({ ok: false, code: 'UNAVAILABLE', message });
      return;
    }
    for (const a of accepted) a.item.resolve({ ok: true, ids: a.ids });
  }

  /**
   * Writes verified batches to the pending pool from this thread (lmdb-js commits on its
   * own writer thread), resolves once they are durable, then hands them to the committer.
   * The acknowledgement never waits for the committer's event loop, which may be busy
   * executing a block. Batches already pending or committed are skipped; a copy of a
   * batch whose write is still in progress waits for that write. Throws LedgerUnavailable
   * when the write fails (nothing is acknowledged then).
   */
  async #persist(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    if (this.#closed) throw new LedgerUnavailable('The node is shutting down');
    if (this.#fault !== null) throw new LedgerUnavailable(this.#faultMessage());
    const seen = new Set<string>();
    let earlier: Array<Promise<void>> | undefined;
    const fresh = batches.filter((b) => {
      if (seen.has(b.id)) return false;
      seen.add(b.id);
      const w = this.#writing.get(b.id);
      if (w) (earlier ??= []).push(w);
      return !w && !this.#pending.has(b.id) && !this.stores.batchIndex.doesExist(b.id);
    });
    if (fresh.length > 0) await Promise.all([this.#writeSegment(fresh), ...(earlier ?? [])]);
    else if (earlier) await Promise.all(earlier);
  }

  #writeSegment(fresh: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    const seg = this.#nextSeq;
    this.#nextSeq += fresh.length;
    // Reserve the ids now so that a concurrent copy is not written twice (it waits for this write).
    for (const b of fresh) this.#pending.add(b.id);
    const write = (async (): Promise<void> => {
      try {
        if (this.#pendingFault) {
          if (this.#pendingFault.delayMs) await new Promise((r) => setTimeout(r, this.#pendingFault!.delayMs));
          this.#pendingFault.check();
        }
        await this.#pendingDb.put(seg, encodeSegment(fresh));
        if (this.#ackDurability === 'flush') await this.#pendingDb.flushed;
      } catch (err) {
        for (const b of fresh) this.#pending.delete(b.id);
        const cause = await writeFailure(err);
        log.error(`pending pool write failed: ${cause.message}`);
        throw new LedgerUnavailable(`The batches could not be stored in the pending pool: ${cause.message}`);
      } finally {
        for (const b of fresh) this.#writing.delete(b.id);
      }
      const msg: ToCommitter = { type: 'enqueue', seg, batches: fresh };
      this.#committer.postMessage(msg);
    })();
    for (const b of fresh) this.#writing.set(b.id, write);
    return write;
  }

  /**
   * Submits batches the node built and signed itself: no verification, no back-pressure.
   * Rejects with LedgerUnavailable when the node cannot store them.
   */
  submitTrusted(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    return this.#persist(batches);
  }

  status(id: string): StatusEntry {
    const s = this.stores;
    if (s.batchIndex.doesExist(id)) return { id, status: 'COMMITTED', invalid_transactions: [] };
    if (this.#pending.has(id)) return { id, status: 'PENDING', invalid_transactions: [] };
    const inv = s.invalid.get(id);
    if (inv) return { id, status: 'INVALID', invalid_transactions: inv.invalid_transactions };
    return { id, status: 'UNKNOWN', invalid_transactions: [] };
  }

  /** Resolves when none of `ids` is PENDING any more, or after `timeoutMs`. */
  waitFor(ids: string[], timeoutMs: number): Promise<void> {
    const remaining = new Set(ids.filter((id) => this.status(id).status === 'PENDING'));
    if (remaining.size === 0 || timeoutMs <= 0 || this.#closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const w: Waiter = {
        remaining,
        done: () => {
          clearTimeout(timer);
          for (const id of remaining) this.#waiters.get(id)?.delete(w);
          resolve();
        },
      };
      const timer = setTimeout(() => w.done(), timeoutMs);
      for (const id of remaining) {
        let set = this.#waiters.get(id);
        if (!set) this.#waiters.set(id, (set = new Set()));
        set.add(w);
      }
    });
  }

  /** Current head as stored (the same snapshot the reads of this turn use). */
  storedHead(): ChainHead {
    return (this.stores.meta.get(HEAD_KEY) as ChainHead | undefined) ?? this.head;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const ws of this.#waiters.values()) for (const w of ws) w.done();
    this.#waiters.clear();
    await this.#pool.destroy();
    await this.#pendingDb.close();
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => void this.#committer.terminate().then(() => resolve()), 10_000);
      this.#committer.on('message', (m: FromCommitter) => {
        if (m.type === 'closed') {
          clearTimeout(t);
          resolve();
        }
      });
      this.#committer.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      this.#committer.postMessage({ type: 'shutdown' } satisfies ToCommitter);
    });
  }
}
