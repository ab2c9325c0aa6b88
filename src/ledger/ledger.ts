/**
 * A ledger as the HTTP thread sees it: one instance of the engine, built from a ledger
 * description. It puts together the ingest (verify pool, pending-pool writer), the
 * committer client, the status waiters and the query service, and owns the ledger's
 * fault: once set, no more batches are acknowledged.
 */
import type { RootDatabase } from 'lmdb';
import type { Config } from '../config.js';
import type { Signer } from '../crypto/secp256k1.js';
import { log } from '../log.js';
import { openPendingEnv } from '../store/db.js';
import type { ChainHead } from '../store/ledger-stores.js';
import type { BlockEvent, ClientTraffic } from './protocol.js';
import type { IngestMetrics } from '../metrics.js';
import { NODE_LEDGER, type LedgerDescription } from './description.js';
import { CommitterClient } from './committer-client.js';
import { Ingest, type SubmitResult } from './ingest.js';
import { PendingWriter } from './pending-writer.js';
import { StatusWaiters } from './status-waiters.js';
import { LedgerQuery, type StatusEntry } from './query.js';
import { ANY_FAMILY } from './catalog.js';
import type { ComponentOptions } from '../component/server.js';
import type { VerifyResult } from './verify.js';

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
  /** Serve the component endpoint for transaction processors (the node's own ledger only). */
  component?: ComponentOptions;
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
  readonly #writer: PendingWriter;
  readonly #waiters = new StatusWaiters();
  readonly #listeners = new Set<(e: BlockEvent) => void>();
  #committer!: CommitterClient;
  #fault: string | null = null;
  readonly #faultListeners = new Set<(reason: string) => void>();
  #closed = false;
  #clientHandler: ((m: ClientTraffic) => void) | null = null;
  /** Client messages that came before a handler was attached (start-up), bounded. */
  readonly #clientEarly: ClientTraffic[] = [];

  private constructor(
    opts: LedgerStartOptions,
    description: LedgerDescription,
    ready: { head: ChainHead; pendingIds: string[]; nextSeq: number; queueLimit: number; componentEndpoint?: string | undefined },
  ) {
    const { config } = opts;
    this.description = description;
    this.nodePublicKey = opts.nodeSigner.publicKey;
    this.head = ready.head;
    this.queueLimit = ready.queueLimit;
    this.componentEndpoint = ready.componentEndpoint;
    this.#writer = new PendingWriter({
      db: openPendingEnv(config.dataDir, description.pendingFile),
      ackDurability: config.ackDurability,
      nextSeq: ready.nextSeq,
      pendingIds: ready.pendingIds,
      committed: (id) => this.query.isBatchCommitted(id),
      enqueue: (seg, batches, transfer) => this.#committer.enqueue(seg, batches, transfer),
      refusal: () => (this.#closed ? 'The node is shutting down' : this.#fault !== null ? this.#faultMessage() : null),
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
      families: opts.component ? [...description.families, ANY_FAMILY] : description.families,
      writer: this.#writer,
      queueLimit: () => this.queueLimit,
      settled: (id) => this.query.isBatchCommitted(id) || this.query.hasVerdict(id),
      faultMessage: () => (this.#fault === null ? null : this.#faultMessage()),
      metrics: opts.metrics,
    });
  }

  static async start(opts: LedgerStartOptions): Promise<Ledger> {
    const { config } = opts;
    const description = opts.description ?? NODE_LEDGER;
    let ledger: Ledger | undefined;
    const { client, ready } = await CommitterClient.start(
      {
        dataDir: config.dataDir,
        description,
        nodeKeyFile: opts.nodeKeyFile,
        maxBatchesPerBlock: config.maxBatchesPerBlock,
        minBlockIntervalMs: config.minBlockIntervalMs,
        queueMultiplier: config.queueMultiplier,
        queueInitialAverage: config.queueInitialAverage,
        dependencyWaitMs: config.dependencyWaitSec * 1000,
        component: opts.component,
        stateCheckpointBlocks: config.stateCheckpointBlocks,
        stateCheckpointChunk: config.stateCheckpointChunk,
      },
      () => ({
        onBlock: (e) => ledger!.#onBlock(e),
        onClient: (m) => ledger!.#onClient(m),
        onFault: (reason, code) => {
          if (code !== 'THREAD_EXITED' || !ledger!.#closed) ledger!.markFaulty(reason);
        },
      }),
    );
    ledger = new Ledger(opts, description, ready);
    ledger.#committer = client;
    log.info(`chain head ${ready.head.blockNum} ${ready.head.blockId.slice(0, 16)}…, ${ready.pendingIds.length} pending batches`);
    return ledger;
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

  onBlock(listener: (e: BlockEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #onBlock(m: BlockEvent): void {
    this.query.refresh();
    if (m.head) this.head = m.head;
    this.queueLimit = m.queueLimit;
    for (const id of m.committed) this.#settle(id);
    for (const id of m.invalid) this.#settle(id);
    for (const l of this.#listeners) l(m);
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
    this.#writer.settle(id);
    this.#waiters.settle(id);
  }

  #faultMessage(): string {
    return `The node stopped accepting batches and is restarting: ${this.#fault}`;
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

  /** Resolves when none of `ids` is PENDING any more, or after `timeoutMs`. */
  waitFor(ids: string[], timeoutMs: number): Promise<void> {
    return this.#waiters.waitFor(
      ids.filter((id) => this.query.status(id).status === 'PENDING'),
      this.#closed ? 0 : timeoutMs,
    );
  }

  /** Current head as stored (the same snapshot the reads of this turn use). */
  storedHead(): ChainHead {
    return this.query.head();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#waiters.close();
    await this.#ingest.close();
    await this.#writer.close();
    await this.#committer.close();
  }
}
