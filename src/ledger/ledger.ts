/**
 * A ledger as the HTTP thread sees it: one instance of the engine, built from a ledger
 * description. It puts together the ingest (verify pool, pending-pool writer), the
 * committer client, the status waiters and the query service. A storage fault (a failed or
 * stalled write, a committer thread that died) raises an alarm on the node's board
 * (src/store/alarms.ts): no more batches are acknowledged while it is raised, and the
 * ledger recovers by itself with a bounded back-off: it restarts the committer from the
 * last durable block (the same path as a start, which recovers every acknowledged batch
 * from the pending pool), probes the pending pool, and clears the alarm once both take
 * durable writes again. The process never exits for it.
 */
import type { RootDatabase } from 'lmdb';
import type { Config } from '../config.js';
import type { Signer } from '../crypto/secp256k1.js';
import { log } from '../log.js';
import { StartupError } from '../store/lock.js';
import { writeFailure } from '../store/errors.js';
import { openPendingEnv } from '../store/db.js';
import { STUCK, envPanicked, reopenEnv, reopenable } from '../store/reopen.js';
import type { ChainHead } from '../store/ledger-stores.js';
import type { BlockEvent, ClientTraffic, ProcessorsReport } from './protocol.js';
import type { IngestMetrics } from './ingest.js';
import { NODE_LEDGER, type LedgerDescription } from './description.js';
import { CommitterClient, SpareThread, type ProcessorsMessage } from './committer-client.js';
import { Ingest, type SubmitResult } from './ingest.js';
import { PendingWriter } from './pending-writer.js';
import { StatusWaiters } from './status-waiters.js';
import { LedgerQuery, type StatusEntry } from './query.js';
import { ANY_FAMILY } from './catalog.js';
import type { VerifyResult } from './verify.js';
import type { CommitterFaultCode, CommitterOptions, PluginOptionsOf, SharedLogOptions, ToCommitter } from './protocol.js';
import type { AckWriter } from './ack-writer.js';
import { AlarmBoard, ROOM_TO_CLEAR_BYTES, classifyInDir, freeBytes, type AlarmKind } from '../store/alarms.js';
import { DEFAULT_STALL_MS } from './chain-writer.js';

/** A start failure that means the stored data is damaged (a checksum, a state record, an LMDB page). */
const DAMAGED = /(?:Corrupt\w*Error): (.*)|corrupt record in .*|damaged page in .*|MDB_(?:CORRUPTED|PAGE_NOTFOUND|BAD_TXN|INVALID).*/;

/** Back-off between recovery attempts: doubling from the first, capped at the last (ms). */
const RECOVERY_FIRST_MS = 250;
const RECOVERY_MAX_MS = 15_000;
/**
 * Restarts of a committer thread that died for a reason other than storage, in a row
 * (without a block committed between): past it the COMMITTER alarm stays raised.
 */
const MAX_CRASH_RESTARTS = 5;
/** The alarms a successful recovery clears (a corrupt record stays until an operator clears it). */
const RECOVERABLE: readonly AlarmKind[] = ['NOSPACE', 'IO', 'STALLED', 'COMMITTER'];

export { countBatches, type SubmitResult } from './ingest.js';
export { LedgerUnavailable } from './pending-writer.js';
export type { BatchStatus, StatusEntry } from './query.js';

/** Client messages kept while the node starts (before the client service is attached). */
const MAX_EARLY_CLIENT_MESSAGES = 1024;

export interface LedgerStartOptions {
  config: Config;
  db: RootDatabase;
  nodeSigner: Signer;
  nodeKeyFile: string;
  /** What ledger to run; the node's own by default. */
  description?: LedgerDescription;
  /** Metrics hooks of the ingest (src/metrics.ts); absent when metrics are off. */
  metrics?: IngestMetrics;
  /**
   * The plug-ins' options for the committer (the component endpoint for transaction
   * processors, under `component`: the node's own ledger only).
   */
  plugins?: PluginOptionsOf;
  /**
   * An external executor (the component endpoint's processors) may serve families the ledger
   * does not know: a batch of any family is accepted, and waits for a processor.
   */
  anyFamily?: boolean;
  /** The node's alarm board (a board of its own when absent). */
  alarms?: AlarmBoard;
  /** Other durable writes a recovery must see succeed (e.g. the node API's stores). */
  probes?: Array<() => Promise<void>>;
  /** A cluster member: batches go to the cluster's log, and rounds come from it (src/cluster). */
  log?: SharedLog;
}

/** What a ledger gives the writer of a shared log. */
export interface SharedLogHooks {
  /** The next log revision the committer needs. */
  nextRev: number;
  tell(m: ToCommitter): void;
  /** Null while batches may be acknowledged; else the message of the 503. */
  refusal(): string | null;
  /** The last durable head. */
  head(): ChainHead;
  /** Raises an alarm (a chain that differs from the cluster's). */
  fault(cause: string, kind: AlarmKind): void;
  /** Verifies BatchList bodies against the ledger's families in its verify pool. */
  verify(bodies: Uint8Array[]): Promise<VerifyResult[]>;
}

/** A log several nodes share, in place of the pending pool (src/cluster/link.ts). */
export interface SharedLog {
  /** What the committer over the log needs (its plug-in declares it: src/cluster/protocol.ts). */
  committer: SharedLogOptions;
  open(h: SharedLogHooks): AckWriter & { applied(rev: number, durable: boolean): void; start(): void; readThrough(timeoutMs: number): Promise<void> };
}

export class Ledger {
  readonly description: LedgerDescription;
  readonly nodePublicKey: string;
  /** What the interfaces read: chain, state at a head, statuses, receipts. */
  readonly query: LedgerQuery;
  head: ChainHead;
  queueLimit: number;
  /** tcp://host:port of the component endpoint, when it is served. */
  readonly componentEndpoint: string | undefined;
  readonly #ingest: Ingest;
  readonly #writer: AckWriter;
  /** The shared log, on a cluster member (the same object as #writer). */
  readonly #log: ReturnType<SharedLog['open']> | null;
  readonly #waiters = new StatusWaiters();
  readonly #listeners = new Set<(e: BlockEvent) => void>();
  #committer!: CommitterClient;
  /** A committer thread started ahead, for the next restart (none once closed). */
  #spare: SpareThread | null = null;
  /** The committer client is gone (its thread failed): a recovery starts a new one. */
  #committerDown = false;
  /** Generation of the committer client: events of an earlier one are ignored. */
  #generation = 0;
  readonly #committerOptions: CommitterOptions;
  readonly alarms: AlarmBoard;
  readonly #probes: Array<() => Promise<void>>;
  #recovery: NodeJS.Timeout | null = null;
  #recovering = false;
  #attempt = 0;
  /** Committer restarts in a row after a crash that was not a storage error. */
  #crashRestarts = 0;
  readonly #stallMs: number;
  readonly #dataDir: string;
  /**
   * This thread's handles on the main environment and on the pending pool's (null for a
   * cluster member, which has none), reopened after a fatal error (src/store/reopen.ts).
   */
  readonly #db: RootDatabase;
  readonly #pendingDb: RootDatabase<Buffer, number> | null;
  #closed = false;
  #clientHandler: ((m: ClientTraffic) => void) | null = null;
  /** Client messages that came before a handler was attached (start-up), bounded. */
  readonly #clientEarly: ClientTraffic[] = [];
  /** The component endpoint's processors as last reported (null: no endpoint, or none reported yet). */
  processors: ProcessorsReport | null = null;
  readonly #processorListeners = new Set<(r: ProcessorsReport) => void>();
  /** Pending batches that wait on a transaction processor, with why (until they settle). */
  readonly #setAside = new Map<string, string>();

  private constructor(
    opts: LedgerStartOptions,
    description: LedgerDescription,
    ready: { head: ChainHead; pendingIds: string[]; nextSeq: number; queueLimit: number; componentEndpoint?: string | undefined },
    committerOptions: CommitterOptions,
    alarms: AlarmBoard,
  ) {
    const { config } = opts;
    this.description = description;
    this.#committerOptions = committerOptions;
    this.#dataDir = config.dataDir;
    this.#db = opts.db;
    this.#pendingDb = opts.log ? null : reopenable(() => openPendingEnv(config.dataDir, description.pendingFile));
    this.alarms = alarms;
    this.#probes = opts.probes ?? [];
    this.#stallMs = committerOptions.storageStallMs ?? DEFAULT_STALL_MS;
    this.nodePublicKey = opts.nodeSigner.publicKey;
    this.head = ready.head;
    this.queueLimit = ready.queueLimit;
    this.componentEndpoint = ready.componentEndpoint;
    const refusal = (): string | null => (this.#closed ? 'The node is shutting down' : this.fault !== null ? this.#faultMessage() : null);
    this.#log = opts.log
      ? opts.log.open({
          nextRev: ready.nextSeq,
          tell: (m) => this.#committer.tell(m),
          refusal,
          head: () => this.head,
          fault: (cause, kind) => this.markFaulty(cause, kind),
          verify: (bodies) => this.#ingest.verifyBodies(bodies, description.families),
        })
      : null;
    this.#writer =
      this.#log ??
      new PendingWriter({
        db: this.#pendingDb ?? openPendingEnv(config.dataDir, description.pendingFile),
        ackDurability: config.ackDurability,
        nextSeq: ready.nextSeq,
        pendingIds: ready.pendingIds,
        committed: (id) => this.query.isBatchCommitted(id),
        enqueue: (seg, batches, transfer) => this.#committer.enqueue(seg, batches, transfer),
        refusal,
        onFault: (err) => this.storageFault(err, description.pendingFile ?? 'pending.mdb'),
        stallMs: this.#stallMs,
      });
    this.query = new LedgerQuery({
      db: opts.db,
      storePrefix: description.storePrefix,
      leafEncoding: description.leafEncoding,
      pending: (id) => this.#writer.has(id),
      head: () => this.head,
      stateHistory: config.stateHistoryBlocks,
    });
    this.#ingest = new Ingest({
      nodePublicKey: this.nodePublicKey,
      poolThreads: config.poolThreads,
      // With processors, a batch of any family is accepted: it waits for one (src/component).
      families: opts.anyFamily ? [...description.families, ANY_FAMILY] : description.families,
      writer: this.#writer,
      queueLimit: () => this.queueLimit,
      settled: (id) => this.query.isBatchCommitted(id) || this.query.hasVerdict(id),
      faultMessage: () => (this.fault === null ? null : this.#faultMessage()),
      metrics: opts.metrics,
    });
  }

  static async start(opts: LedgerStartOptions): Promise<Ledger> {
    const { config } = opts;
    const description = opts.description ?? NODE_LEDGER;
    let ledger: Ledger | undefined;
    const committerOptions: CommitterOptions = {
      dataDir: config.dataDir,
      description,
      nodeKeyFile: opts.nodeKeyFile,
      maxBatchesPerBlock: config.maxBatchesPerBlock,
      minBlockIntervalMs: config.minBlockIntervalMs,
      queueMultiplier: config.queueMultiplier,
      queueInitialAverage: config.queueInitialAverage,
      dependencyWaitMs: config.dependencyWaitSec * 1000,
      ...opts.plugins,
      stateCheckpointBlocks: config.stateCheckpointBlocks,
      stateCheckpointChunk: config.stateCheckpointChunk,
      storageStallMs: (config.storageStallSec ?? DEFAULT_STALL_MS / 1000) * 1000,
      ...(opts.log ? { sharedLog: opts.log.committer } : {}),
    };
    let started: Awaited<ReturnType<typeof CommitterClient.start>>;
    try {
      started = await CommitterClient.start(committerOptions, () => ({
        onBlock: (e) => {
          if (ledger) ledger.#onBlock(e, 0);
        },
        onClient: (m) => {
          if (ledger) ledger.#onClient(m);
        },
        onProcessors: (m) => {
          if (ledger) ledger.#onProcessors(m, 0);
        },
        onFault: (reason, code) => {
          if (ledger) ledger.#onCommitterFault(reason, code, 0);
        },
      }));
    } catch (err) {
      // A record the start needs failed its checksum: refuse, naming it and what to do.
      // (The committer names the error's class: the state it rebuilds failed its checks too.)
      const m = err instanceof Error ? DAMAGED.exec(err.message) : null;
      if (m) {
        throw new StartupError(
          `the data directory ${config.dataDir} is damaged; the node will not start on it: ${m[1] ?? m[0]}\n` +
            `Stop here: restore the directory from a backup (ledger.mdb and pending.mdb together), and run \`cairn check --data-dir ${config.dataDir}\` to list every problem.`,
        );
      }
      throw err;
    }
    const { client, ready } = started;
    ledger = new Ledger(opts, description, ready, committerOptions, opts.alarms ?? new AlarmBoard());
    ledger.#committer = client;
    ledger.#spare = new SpareThread();
    ledger.#log?.start();
    log.info(`chain head ${ready.head.blockNum} ${ready.head.blockId.slice(0, 16)}…, ${ready.pendingIds.length} pending batches`);
    return ledger;
  }

  /** The raised alarms in one line, or null: while set, acknowledgements stop (503) and /status reports it. */
  get fault(): string | null {
    return this.alarms.summary();
  }

  /**
   * A fault found outside the storage layer's own paths (an unhandled error, a failed
   * integrity check of a read): raises its alarm (a storage error by its cause, else
   * COMMITTER) and starts a recovery.
   */
  markFaulty(reason: string, kind?: AlarmKind): void {
    const s = kind ? { kind, cause: reason } : (this.#classify({ message: reason }, 'ledger.mdb') ?? { kind: 'COMMITTER' as const, cause: reason });
    this.alarms.raise(s.kind, s.cause);
    if (s.kind !== 'CORRUPT') this.#scheduleRecovery();
  }

  /** A storage operation of the HTTP thread failed: raises its alarm and starts a recovery. Returns the alarm's cause, or null for an error that is not a storage error. */
  storageFault(err: unknown, file: string): string | null {
    const s = this.#classify(err, file);
    if (!s) return null;
    this.alarms.raise(s.kind, s.cause);
    if (s.kind !== 'CORRUPT') this.#scheduleRecovery();
    return s.cause;
  }

  #onCommitterFault(reason: string, code: CommitterFaultCode | 'THREAD_FAILED' | 'THREAD_EXITED', generation: number): void {
    if (this.#closed || generation !== this.#generation || this.#committerDown) return;
    this.#committerDown = true;
    const file = code === 'PENDING_CLEANUP_FAILED' ? (this.description.pendingFile ?? 'pending.mdb') : 'ledger.mdb';
    const s = this.#classify({ message: reason }, file);
    if (s) this.alarms.raise(s.kind, s.cause);
    else {
      this.#crashRestarts++;
      this.alarms.raise('COMMITTER', reason);
    }
    log.error(`committer stopped (${code}): ${reason}`);
    this.#scheduleRecovery();
  }

  #classify(err: unknown, file: string): { kind: AlarmKind; cause: string } | null {
    return classifyInDir(err, file, this.#dataDir);
  }

  #scheduleRecovery(delay = 0): void {
    if (this.#closed || this.#recovery || this.#recovering) return;
    this.#recovery = setTimeout(() => {
      this.#recovery = null;
      void this.#recover();
    }, delay);
  }

  /** Operator's "clear": clears the given alarms (all when none) and tries a recovery at once. */
  clearAlarms(kinds?: readonly AlarmKind[]): void {
    this.alarms.clear(kinds);
    this.#crashRestarts = 0;
    this.#attempt = 0;
    if (this.#committerDown || this.alarms.has()) this.#scheduleRecovery();
  }

  /**
   * One recovery attempt: a new committer when the old one failed (it recovers from the
   * last durable block and probes the ledger file), then the probes of the other stores.
   * All good: the recoverable alarms clear. Else the next attempt waits twice as long.
   */
  async #recover(): Promise<void> {
    if (this.#closed) return;
    this.#recovering = true;
    try {
      // A broken environment (see #restartCommitter) is reopened only with the committer's
      // handle closed: a committer that has not failed yet (nothing to write) is replaced too.
      if (!this.#committerDown && this.#brokenEnvs().length) this.#committerDown = true;
      if (this.#committerDown) {
        if (this.#crashRestarts > MAX_CRASH_RESTARTS) {
          log.error(
            `the committer failed ${this.#crashRestarts} times in a row; the alarm stays raised until an operator clears it (cairn alarm clear)`,
          );
          return;
        }
        await this.#restartCommitter();
      }
      await this.#writer.probe();
      for (const p of this.#probes) await p();
      // A full disk clears with room to work in, not as soon as a few probe bytes fit in it
      // (else the node would flap between read-only and refusing its next real write).
      const free = freeBytes(this.#dataDir);
      if (this.alarms.has('NOSPACE') && free < ROOM_TO_CLEAR_BYTES)
        throw new Error(`the disk is still full: ${free} bytes free, ${ROOM_TO_CLEAR_BYTES} needed to clear`);
      if (this.#committerDown) throw new Error('the committer failed again during the recovery');
      this.#attempt = 0;
      this.alarms.clear(RECOVERABLE);
    } catch (err) {
      const cause = (await writeFailure(err)).message;
      if (this.#closed) return;
      const s = this.#classify({ message: cause }, 'ledger.mdb');
      if (s) this.alarms.raise(s.kind, s.cause);
      this.#attempt++;
      const delay = Math.min(RECOVERY_MAX_MS, RECOVERY_FIRST_MS * 2 ** Math.min(this.#attempt, 16));
      log.warn(`recovery attempt ${this.#attempt} failed (${cause}); next in ${(delay / 1000).toFixed(1)} s`);
      this.#recovering = false;
      this.#scheduleRecovery(delay);
      return;
    } finally {
      this.#recovering = false;
    }
  }

  /** The environments of this thread that had a fatal error (every transaction on them fails), with their file. */
  #brokenEnvs(): Array<[RootDatabase, string]> {
    const envs: Array<[RootDatabase, string]> = [[this.#db, 'ledger.mdb']];
    if (this.#pendingDb) envs.push([this.#pendingDb, this.description.pendingFile ?? 'pending.mdb']);
    return envs.filter(([db]) => envPanicked(db));
  }

  /**
   * Ends the failed committer thread and starts a new one from the last durable block. A
   * failed committer stops at once (what it had in flight is redone from the pending pool), and
   * the new one starts on the spare thread without waiting for the old thread's end. If an
   * environment had a fatal error (a failed meta-page write: every transaction on it fails with
   * MDB_PANIC, in every thread), this thread's handle is reopened once the other threads, and
   * their handles, are gone (src/store/reopen.ts): the new committer then opens a sound one.
   */
  async #restartCommitter(): Promise<void> {
    const generation = ++this.#generation;
    // Resolves once the old committer is done (a failed one at once, its component endpoint
    // closed); its thread ends a moment later, by itself.
    const old = this.#committer;
    await old.close(2_000);
    // Writes in progress settle first: the new committer reads the pool as they left it.
    await this.#writer.drain(this.#stallMs);
    const broken = this.#brokenEnvs();
    if (broken.length) {
      // A broken environment is reopened only once no thread holds it: the old committer's
      // thread, and the circuits' committer threads, which start again by their own recovery
      // once it is sound (src/scabbard/committer-link.ts).
      const gone = await old.ended(2_000);
      const others = broken.some(([db]) => db === this.#db) ? await CommitterClient.endAll(this.#dataDir) : true;
      // A thread that does not end holds the environment for good (writerStuck, src/store/write-errors.ts).
      if (!gone || !others) throw new Error(STUCK);
    }
    for (const [db, file] of broken) {
      await reopenEnv(db);
      log.warn(`the environment of ${file} had a fatal error (a failed meta-page write): reopened`);
    }
    // The spare thread has its modules loaded: the new committer starts in a fraction of the time.
    const spare = this.#spare;
    this.#spare = null;
    const { client, ready } = await CommitterClient.start(
      { ...this.#committerOptions, recovery: true },
      () => ({
        onBlock: (e) => this.#onBlock(e, generation),
        onClient: (m) => this.#onClient(m),
        onProcessors: (m) => this.#onProcessors(m, generation),
        onFault: (reason, code) => this.#onCommitterFault(reason, code, generation),
      }),
      spare,
    ).finally(() => {
      if (!this.#closed) this.#spare = new SpareThread();
    });
    if (this.#closed) {
      await client.close();
      return;
    }
    this.#committer = client;
    this.#committerDown = false;
    // The new committer tells again which batches wait on a processor, as it meets them, and
    // its endpoint counts from zero.
    this.#setAside.clear();
    if (this.processors)
      this.#onProcessors({ type: 'processors', report: { families: [], setAside: [], transactionsSetAside: 0, processorsSetAside: 0 } }, generation);
    this.#writer.reset(ready.pendingIds, ready.nextSeq);
    this.head = ready.head;
    this.queueLimit = ready.queueLimit;
    this.query.refresh();
    log.info(`committer restarted at block ${ready.head.blockNum}; ${ready.pendingIds.length} pending batches recovered`);
  }

  onBlock(listener: (e: BlockEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #onBlock(m: BlockEvent, generation: number): void {
    if (generation !== this.#generation) return;
    if (m.head) this.#crashRestarts = 0;
    this.query.refresh();
    if (m.head) this.head = m.head;
    this.queueLimit = m.queueLimit;
    for (const id of m.committed) this.#settle(id);
    for (const id of m.invalid) this.#settle(id);
    // A round has batches (committed or invalid) and is durable; a report without any is of log
    // entries that added nothing, applied without a write of their own.
    if (this.#log && m.round) this.#log.applied(m.round.height, m.committed.length + m.invalid.length > 0);
    for (const l of this.#listeners) l(m);
  }

  #onProcessors(m: ProcessorsMessage, generation: number): void {
    if (generation !== this.#generation) return;
    if (m.type === 'set-aside') {
      // Only batches still pending: one settled meanwhile (its event came first) is not kept.
      for (const [id, why] of m.batches) if (this.query.status(id).status === 'PENDING') this.#setAside.set(id, why);
      return;
    }
    this.processors = m.report;
    for (const l of this.#processorListeners) l(m.report);
  }

  /** Calls `listener` with each report of the component endpoint's processors. */
  onProcessors(listener: (r: ProcessorsReport) => void): () => void {
    this.#processorListeners.add(listener);
    return () => this.#processorListeners.delete(listener);
  }

  /** Why a pending batch waits, when it waits on a transaction processor. */
  setAsideReason(id: string): string | undefined {
    return this.#setAside.get(id);
  }

  /** Pending batches that wait on a transaction processor. */
  get setAsideCount(): number {
    return this.#setAside.size;
  }

  #onClient(m: ClientTraffic): void {
    if (this.#clientHandler) this.#clientHandler(m);
    else if (this.#clientEarly.length < MAX_EARLY_CLIENT_MESSAGES) this.#clientEarly.push(m);
  }

  /**
   * Serves the clients of the component endpoint (src/component/client-service.ts): their
   * messages go to `handler`, answers go back with `sendClient`.
   */
  onClientMessage(handler: (m: ClientTraffic) => void): void {
    this.#clientHandler = handler;
    for (const m of this.#clientEarly.splice(0)) handler(m);
  }

  sendClient(peer: string, body: Uint8Array): void {
    if (!this.#closed) this.#committer.sendClient(peer, body);
  }

  #settle(id: string): void {
    this.#setAside.delete(id);
    this.#writer.settle(id);
    this.#waiters.settle(id);
  }

  #faultMessage(): string {
    return `The node is read-only until its storage alarm clears (it retries by itself): ${this.fault}`;
  }

  /** Batches acknowledged and not yet settled. */
  get pendingCount(): number {
    return this.#writer.size;
  }

  /** Share of the verify pool's threads busy since start (0..1). */
  get verifyUtilization(): number {
    return this.#ingest.verifyUtilization;
  }

  /**
   * Signature and structure checks of BatchList bodies in this ledger's verify workers,
   * against the families given (not the ledger's own): the circuit ledgers' checks.
   */
  verifyBodies(bodies: readonly Uint8Array[], families: string[]): Promise<VerifyResult[]> {
    return this.#ingest.verifyBodies(bodies, families);
  }

  /** True when `batches` more would exceed the limit (checked before any signature work). */
  overLimit(batches = 1): boolean {
    return this.#ingest.overLimit(batches);
  }

  /** Submits one POST /batches body. Resolves once every batch is durable in the pending pool. */
  submit(body: Uint8Array): Promise<SubmitResult> {
    return this.#ingest.submit(body);
  }

  /**
   * Submits batches the node built and signed itself: no verification, no back-pressure.
   * Rejects with LedgerUnavailable when the node cannot store them.
   */
  submitTrusted(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    return this.#writer.persist(batches);
  }

  status(id: string): StatusEntry {
    return this.query.status(id);
  }

  /**
   * Resolves when none of `ids` is PENDING any more, or after `timeoutMs`. On a cluster
   * member, a batch unknown here may be in the log already (acknowledged by another member):
   * the member first reads the log as far as it goes now, so that UNKNOWN means not in it.
   */
  async waitFor(ids: string[], timeoutMs: number): Promise<void> {
    const start = Date.now();
    if (this.#log && !this.#closed && timeoutMs > 0 && ids.some((id) => this.query.status(id).status === 'UNKNOWN'))
      await this.#log.readThrough(timeoutMs);
    return this.#waiters.waitFor(
      ids.filter((id) => this.query.status(id).status === 'PENDING'),
      this.#closed ? 0 : Math.max(0, timeoutMs - (Date.now() - start)),
    );
  }

  /** Current head as stored (the same snapshot the reads of this turn use). */
  storedHead(): ChainHead {
    return this.query.head();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#recovery) clearTimeout(this.#recovery);
    this.#recovery = null;
    this.#waiters.close();
    await this.#ingest.close();
    await this.#writer.close();
    await this.#committer.close();
    await this.#spare?.close();
    this.#spare = null;
  }
}
