/**
 * A ledger as the HTTP thread sees it: one instance of the engine, built from a ledger
 * description. It puts together the ingest (verify pool, pending-pool writer or shared
 * log), the committer client, the status waiters and the query service. A storage fault
 * raises an alarm on the node's board (src/store/alarms.ts): no more batches are
 * acknowledged while it is raised, and the ledger recovers by itself (recovery.ts: it
 * restarts the committer from the last durable block, probes the stores, clears the alarm).
 */
import type { RootDatabase } from 'lmdb';
import type { Config } from '../config.js';
import type { Signer } from '../crypto/secp256k1.js';
import { log } from '../log.js';
import { openPendingEnv } from '../store/db.js';
import { reopenable } from '../store/reopen.js';
import type { ChainHead } from '../store/ledger-stores.js';
import type { BlockEvent, ClientTraffic, ProcessorsReport } from './protocol.js';
import type { IngestMetrics } from './ingest.js';
import { NODE_LEDGER, type LedgerDescription } from './description.js';
import { CommitterClient, type CommitterHandlers, type CommitterReady, type ProcessorsMessage } from './committer-client.js';
import { LedgerRecovery, damagedStart } from './recovery.js';
import { ExecutorNews } from './executor-news.js';
import { Ingest, type SubmitResult } from './ingest.js';
import { PendingWriter } from './pending-writer.js';
import { StatusWaiters } from './status-waiters.js';
import { LedgerQuery, type StatusEntry } from './query.js';
import { ANY_FAMILY } from './catalog.js';
import type { VerifyResult } from './verify.js';
import type { CommitterOptions, PluginOptionsOf } from './protocol.js';
import type { SharedLog } from './shared-log.js';
import type { AckWriter } from './ack-writer.js';
import { AlarmBoard, type AlarmKind } from '../store/alarms.js';
import { DEFAULT_STALL_MS } from './chain-writer.js';

export { countBatches, type SubmitResult } from './ingest.js';
export { LedgerUnavailable } from './pending-writer.js';
export type { BatchStatus, StatusEntry } from './query.js';
export type { SharedLog, SharedLogHooks } from './shared-log.js';

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
  /** The fault state, and the committer client it keeps running. */
  readonly #recovery: LedgerRecovery;
  readonly alarms: AlarmBoard;
  readonly #stallMs: number;
  /** This thread's handle on the pending pool's environment (null over a shared log), reopened after a fatal error. */
  readonly #pendingDb: RootDatabase<Buffer, number> | null;
  #closed = false;
  /** The external executor's processors, the batches waiting on them, its clients' traffic. */
  readonly #executor = new ExecutorNews();

  private constructor(
    opts: LedgerStartOptions,
    description: LedgerDescription,
    ready: { head: ChainHead; pendingIds: string[]; nextSeq: number; queueLimit: number; componentEndpoint?: string | undefined },
    committerOptions: CommitterOptions,
    alarms: AlarmBoard,
  ) {
    const { config } = opts;
    this.description = description;
    this.#pendingDb = opts.log ? null : reopenable(() => openPendingEnv(config.dataDir, description.pendingFile));
    this.alarms = alarms;
    this.#stallMs = committerOptions.storageStallMs ?? DEFAULT_STALL_MS;
    this.nodePublicKey = opts.nodeSigner.publicKey;
    this.head = ready.head;
    this.queueLimit = ready.queueLimit;
    this.componentEndpoint = ready.componentEndpoint;
    const refusal = (): string | null => (this.#closed ? 'The node is shutting down' : this.fault !== null ? this.#faultMessage() : null);
    this.#log = opts.log
      ? opts.log.open({
          nextRev: ready.nextSeq,
          tell: (m) => this.#recovery.client.tell(m),
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
        enqueue: (seg, batches, transfer) => this.#recovery.client.enqueue(seg, batches, transfer),
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
    this.#recovery = new LedgerRecovery(alarms, {
      description,
      dataDir: config.dataDir,
      stallMs: this.#stallMs,
      db: opts.db,
      pendingDb: this.#pendingDb,
      writer: this.#writer,
      probes: opts.probes ?? [],
      committerOptions,
      handlers: (generation) => this.#handlers(generation),
      restarted: (ready) => this.#restarted(ready),
      closed: () => this.#closed,
    });
  }

  /** The handlers of a committer client of `generation` (the events of an older one are dropped). */
  #handlers(generation: number): CommitterHandlers {
    return {
      onBlock: (e) => this.#onBlock(e, generation),
      onClient: (m) => this.#onClient(m),
      onProcessors: (m) => this.#onProcessors(m, generation),
      onFault: (reason, code) => this.#recovery.committerFault(reason, code, generation),
    };
  }

  /** A new committer runs after a recovery: the ledger takes its head and pending batches. */
  #restarted(ready: CommitterReady): void {
    this.#executor.restarted();
    this.#writer.reset(ready.pendingIds, ready.nextSeq);
    this.head = ready.head;
    this.queueLimit = ready.queueLimit;
    this.query.refresh();
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
      stateCheckpointBytes: config.stateCheckpointMiB * 1024 * 1024,
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
          if (ledger) ledger.#recovery.committerFault(reason, code, 0);
        },
      }));
    } catch (err) {
      throw damagedStart(err, config.dataDir) ?? err;
    }
    const { client, ready } = started;
    ledger = new Ledger(opts, description, ready, committerOptions, opts.alarms ?? new AlarmBoard());
    ledger.#recovery.begin(client);
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
   * integrity check of a read): raises its alarm and starts a recovery.
   */
  markFaulty(reason: string, kind?: AlarmKind): void {
    this.#recovery.markFaulty(reason, kind);
  }

  /** A storage operation of the HTTP thread failed: raises its alarm and starts a recovery. Returns the alarm's cause, or null for an error that is not a storage error. */
  storageFault(err: unknown, file: string): string | null {
    return this.#recovery.storageFault(err, file);
  }

  /** Operator's "clear": clears the given alarms (all when none) and tries a recovery at once. */
  clearAlarms(kinds?: readonly AlarmKind[]): void {
    this.#recovery.clearAlarms(kinds);
  }

  /**
   * The last block's settling on this thread (for metrics): the seconds it took (the pending
   * pool, the executor, the status waiters woken and their replies started) and the waiters it woke.
   */
  lastSettle = { seconds: 0, woken: 0 };

  onBlock(listener: (e: BlockEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #onBlock(m: BlockEvent, generation: number): void {
    if (generation !== this.#recovery.generation) return;
    if (m.head) this.#recovery.blockCommitted();
    this.query.refresh();
    if (m.head) this.head = m.head;
    this.queueLimit = m.queueLimit;
    const t0 = performance.now();
    let woken = 0;
    for (const id of m.committed) woken += this.#settle(id);
    for (const id of m.invalid) woken += this.#settle(id);
    this.lastSettle = { seconds: (performance.now() - t0) / 1000, woken };
    // A round has batches (committed or invalid) and is durable; a report without any is of log
    // entries that added nothing, applied without a write of their own.
    if (this.#log && m.round) this.#log.applied(m.round.height, m.committed.length + m.invalid.length > 0);
    for (const l of this.#listeners) l(m);
  }

  #onProcessors(m: ProcessorsMessage, generation: number): void {
    if (generation === this.#recovery.generation) this.#executor.report(m, (id) => this.query.status(id).status === 'PENDING');
  }

  /** The component endpoint's processors as last reported (null: no endpoint, or none reported yet). */
  get processors(): ProcessorsReport | null {
    return this.#executor.processors;
  }

  /** Calls `listener` with each report of the component endpoint's processors. */
  onProcessors(listener: (r: ProcessorsReport) => void): () => void {
    return this.#executor.onProcessors(listener);
  }

  /** Why a pending batch waits, when it waits on a transaction processor. */
  setAsideReason(id: string): string | undefined {
    return this.#executor.setAsideReason(id);
  }

  /** Pending batches that wait on a transaction processor. */
  get setAsideCount(): number {
    return this.#executor.setAsideCount;
  }

  #onClient(m: ClientTraffic): void {
    this.#executor.client(m);
  }

  /**
   * Serves the clients of the component endpoint (src/component/client-service.ts): their
   * messages go to `handler`, answers go back with `sendClient`.
   */
  onClientMessage(handler: (m: ClientTraffic) => void): void {
    this.#executor.onClientMessage(handler);
  }

  sendClient(peer: string, body: Uint8Array): void {
    if (!this.#closed) this.#recovery.client.sendClient(peer, body);
  }

  /** Settles `id` everywhere; the status waiters it woke. */
  #settle(id: string): number {
    this.#executor.settled(id);
    this.#writer.settle(id);
    return this.#waiters.settle(id);
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
    this.#recovery.stop();
    this.#waiters.close();
    try {
      await this.#ingest.close();
      await this.#writer.close();
    } finally {
      // The committer closes, and the ledger leaves the process's spare thread, whatever failed before.
      await this.#recovery.close();
    }
  }
}
