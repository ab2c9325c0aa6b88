/**
 * The committer: the single writer of a ledger's data, running in its own thread. It asks
 * its batch source (source.ts) for the next round, has the block builder execute it on top
 * of the tip, asks consensus (consensus.ts) whether the built round may be written, and
 * has the chain writer write it (one LMDB transaction per round); once a round is durable
 * its batches leave the source and its event goes to the HTTP thread. Its collaborators
 * (source, consensus, builder, writer, external executor, genesis) are given to it: the
 * committer thread (workers/committer.ts) runs the composition its options name
 * (plugins.ts): the node's ledger (compose.ts), a circuit's, a cluster member's.
 *
 * Rounds are pipelined: round N+1 is built on round N's state while N's transaction is
 * still being written and synced (the chain writer stages a round's state records), and a
 * round's event is posted only once its transaction is durable. A round that consensus
 * has not decided yet holds the next one back (it is built on the decided tip only).
 */
import type { ChainHead, LedgerStores } from '../store/ledger-stores.js';
import { writeFailure } from '../store/errors.js';
import { log } from '../log.js';
import type { CommitterFaultCode, FromCommitter } from './protocol.js';
import type { BlockBuilder, BuildEntry, BuiltBlock } from './block-builder.js';
import type { ChainWriter } from './chain-writer.js';
import type { ExternalExecutor } from './executor.js';
import type { BatchSource, RoundPlan } from './source.js';
import type { Consensus } from './consensus.js';

/**
 * Rounds built but not yet durable. A slot is held until its round is flushed to disk, so
 * with fsync latency in the way four keep the committer building while earlier rounds
 * sync (two measured ~12% fewer transactions/s with 10-transaction batches). More only
 * grows the staged state and the delay of round events.
 */
const MAX_IN_FLIGHT = 4;
/** Back-off when every pending batch waits on a dependency that is not committed yet. */
const DEPENDENCY_RETRY_MS = 50;

/** A built round, its plan, and the batches waiting when it started (for the rolling average). */
interface Round<E extends BuildEntry> {
  built: BuiltBlock<E>;
  plan: RoundPlan<E>;
  waiting: number;
}

export interface CommitterParts<E extends BuildEntry> {
  stores: LedgerStores;
  writer: ChainWriter;
  builder: BlockBuilder;
  source: BatchSource<E>;
  consensus: Consensus<E>;
  /** Makes block 0 (or the initial state) of an empty chain; resolves with its head once durable. */
  genesis(): Promise<ChainHead>;
  /** The external executor (the component endpoint's transaction processors), when enabled. */
  executor: ExternalExecutor | null;
  /** Least time between two blocks (ms). */
  minBlockIntervalMs: number;
  /**
   * A round due now is built on the next turn of the event loop (setImmediate) rather than
   * after setTimeout(0)'s 1 ms: for a ledger whose every round waits on messages between
   * threads (a circuit's agreement), where that millisecond is paid on each hop.
   */
  immediateRounds?: boolean;
  /** More of the ready message: the pending batches and the pool's next sequence number. */
  readyInfo?(): { pendingIds: string[]; nextSeq: number };
}

export class Committer<E extends BuildEntry = BuildEntry> {
  readonly #p: CommitterParts<E>;
  readonly #post: (m: FromCommitter) => void;
  /** Last durable head. */
  #head!: ChainHead;
  /** Head of the last round accepted (durable or not): the parent of the next one. */
  #tip!: ChainHead;
  /** Batch and transaction ids of rounds accepted but not yet durable. */
  readonly #inFlightBatches = new Set<string>();
  readonly #inFlightTxns = new Set<string>();
  #inFlight = 0;
  #commits: Promise<void> = Promise.resolve();
  /** The next round's wake-up: a timer, or an immediate (`immediateRounds`). */
  #timer: { clear(): void } | null = null;
  #lastBlockAt = 0;
  #closing = false;
  /** Set when a write failed: nothing more is built, written or settled. */
  #failed = false;
  /** A round being built asynchronously (a transaction processor) or waiting on consensus. */
  #building: Promise<void> | null = null;
  /** Batches waiting on a transaction processor, with why, as last told to the HTTP thread. */
  readonly #setAside = new Map<string, string>();

  constructor(parts: CommitterParts<E>, post: (m: FromCommitter) => void) {
    this.#p = parts;
    this.#post = post;
    parts.source.attach(() => this.#schedule());
  }

  get queueLimit(): number {
    return this.#p.source.figures().queueLimit;
  }

  async init(): Promise<void> {
    const { writer, stores, source, executor } = this.#p;
    writer.loadState();
    // Built from the id records now rather than on the first lookup (~0.5 s at a million batches).
    writer.ids.syncComplete(writer.storedHead()?.blockNum, `${stores.prefix}.block_ids`);
    this.#head = writer.storedHead() ?? (await this.#p.genesis());
    this.#tip = this.#head;
    // The minimum block interval counts from start-up (genesis or restart) too.
    this.#lastBlockAt = Date.now();
    await source.recover();
    // A start is also how the ledger recovers from a storage alarm: it counts only once the
    // ledger file takes a durable write again.
    await writer.probe();
    const componentEndpoint = executor ? await executor.start() : undefined;
    const ready = this.#p.readyInfo?.() ?? { pendingIds: [], nextSeq: 0 };
    this.#post({ type: 'ready', componentEndpoint, head: this.#head, ...ready, queueLimit: this.queueLimit });
    this.#schedule();
  }

  #schedule(delay?: number): void {
    if (this.#timer || this.#building || this.#closing || this.#failed || this.#inFlight >= MAX_IN_FLIGHT) return;
    const wait = delay ?? Math.max(0, this.#lastBlockAt + this.#p.minBlockIntervalMs - Date.now());
    const run = (): void => {
      this.#timer = null;
      try {
        this.#round();
      } catch (err) {
        this.#fail('BUILD_FAILED', `block production failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    // setTimeout(0) waits at least 1 ms; a round due now goes after the pending I/O instead.
    if (wait === 0 && this.#p.immediateRounds) {
      const i = setImmediate(run);
      this.#timer = { clear: () => clearImmediate(i) };
    } else {
      const t = setTimeout(run, wait);
      this.#timer = { clear: () => clearTimeout(t) };
    }
  }

  #clearTimer(): void {
    this.#timer?.clear();
    this.#timer = null;
  }

  /**
   * Builds the next round the source gives on the tip, looking past batches in rounds in
   * flight and batches that wait on a dependency (they neither fill the block nor hold
   * back the batches behind them), then asks consensus.
   */
  #round(): void {
    if (this.#closing || this.#failed) return;
    const { source, builder, writer, consensus } = this.#p;
    const plan = source.next(this.#tip, this.#inFlightBatches);
    if (!plan) return;
    const waiting = source.length - this.#inFlightBatches.size;
    const out = builder.start(this.#tip, plan.entries, {
      max: plan.max,
      consensus: (ids) => consensus.summarize(ids),
      isCommittedTxn: (id) => this.#inFlightTxns.has(id) || writer.ids.hasTxn(id),
      skip: (id) => this.#inFlightBatches.has(id),
      dependencyWaitMs: plan.dependencyWaitMs,
    });
    if (out instanceof Promise) {
      // A batch waits on a transaction processor (src/component): the round ends when it answers.
      this.#hold(
        out.then((built) => {
          this.#building = null;
          const deciding = this.#decide({ built, plan, waiting });
          if (deciding) this.#hold(deciding);
        }),
      );
      return;
    }
    const deciding = this.#decide({ built: out, plan, waiting });
    if (deciding) this.#hold(deciding);
  }

  /** Runs `p` as the round in the making (nothing else is built meanwhile); it may hand over to another. */
  #hold(p: Promise<void>): void {
    const held = p.then(
      () => {
        if (this.#building !== held) return;
        this.#building = null;
        this.#schedule();
      },
      (err: unknown) => {
        if (this.#building === held) this.#building = null;
        this.#fail('BUILD_FAILED', `block production failed: ${err instanceof Error ? err.message : String(err)}`);
      },
    );
    this.#building = held;
  }

  /**
   * Asks consensus about a built round; writes it once finalized, drops it if refused. A
   * decision that comes later is returned: the round is held until then.
   */
  #decide(r: Round<E>): Promise<void> | undefined {
    if (this.#closing || this.#failed) return undefined;
    this.#noteSetAside(r.built);
    if (r.built.included.length === 0 && r.built.invalid.length === 0) {
      // Everything waits on dependencies: try again a little later.
      this.#schedule(DEPENDENCY_RETRY_MS);
      return undefined;
    }
    const verdict = this.#p.consensus.finalize(r.built, r.plan.round);
    if (verdict === true) this.#accept(r);
    else if (verdict === false) this.#rejected(r);
    else return verdict.then((ok) => this.#decided(r, ok));
    return undefined;
  }

  /** Tells the HTTP thread which batches newly wait on a transaction processor, and why (their status shows it). */
  #noteSetAside(built: BuiltBlock<E>): void {
    const changed: Array<[string, string]> = [];
    for (const [id, why] of built.setAside) {
      if (this.#setAside.get(id) === why) continue;
      this.#setAside.set(id, why);
      changed.push([id, why]);
    }
    if (changed.length > 0) this.#post({ type: 'set-aside', batches: changed });
  }

  #decided(r: Round<E>, ok: boolean): void {
    if (this.#closing || this.#failed) return;
    if (ok) this.#accept(r);
    else this.#rejected(r);
  }

  /** Consensus refused the round: nothing of it is written; the tip stays where it was. */
  #rejected(r: Round<E>): void {
    this.#p.source.rejected(r.built, r.plan);
    this.#schedule();
  }

  #accept(r: Round<E>): void {
    const { built } = r;
    if (built.head) {
      this.#tip = built.head;
      this.#lastBlockAt = Date.now();
    }
    for (const { entry } of built.included) this.#inFlightBatches.add(entry.id);
    for (const { entry } of built.invalid) this.#inFlightBatches.add(entry.id);
    for (const id of built.txnIds) this.#inFlightTxns.add(id);
    this.#p.writer.stage(built);
    this.#p.source.accepted(built, r.plan);
    this.#inFlight++;
    // Transactions are written in order; chain each completion after the previous one.
    const written = this.#write(r);
    written.catch(() => undefined); // handled in order below
    this.#commits = this.#commits
      .then(() => written)
      .then(
        () => this.#settle(r),
        async (err: unknown) =>
          this.#fail('WRITE_FAILED', `${built.head ? `block ${built.head.blockNum}` : 'verdict'} write failed: ${(await writeFailure(err)).message}`),
      );
    this.#schedule();
  }

  /** Writes a round with the source's own writes; resolves once it is durable. */
  async #write(r: Round<E>): Promise<void> {
    const t0 = performance.now();
    const { meta, extras } = this.#p.source.writes(r.built, r.plan);
    await this.#p.writer.write(r.built, meta, extras);
    const head = r.built.head;
    if (head) {
      log.debug(
        `block ${head.blockNum}: ${r.built.included.length} batches, ${r.built.invalid.length} invalid, ` +
          `build ${r.built.buildMs.toFixed(1)} ms, write ${(performance.now() - t0).toFixed(1)} ms`,
      );
    }
  }

  /** Stops the committer for a failure found outside it (an unhandled error in its thread). */
  halt(message: string): void {
    this.#fail('UNHANDLED', message);
  }

  /** Stops the committer: `code` says why (a write the storage library reported as failed, for one). */
  fail(code: CommitterFaultCode, message: string): void {
    this.#fail(code, message);
  }

  /**
   * A write failed: the rounds built on it are in memory only, so the committer stops
   * here (nothing more is built, written or settled) and reports it; the node stops
   * acknowledging batches, and the restart resumes from the durable head with every
   * unsettled batch still in its source. Later rounds already queued for writing write
   * nothing (the chain writer is halted, and its parent check would refuse them anyway), so
   * the chain never gets a gap, and a new committer may start before this thread has ended.
   */
  #fail(code: CommitterFaultCode, message: string): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#p.writer.halt();
    this.#clearTimer();
    this.#post({ type: 'fatal', code, message });
  }

  /** Runs once an accepted round is durable: publish it and release its bookkeeping. */
  #settle(r: Round<E>): void {
    if (this.#failed) return;
    const { built } = r;
    this.#inFlight--;
    for (const id of built.txnIds) this.#inFlightTxns.delete(id);
    const committed = built.included.map((i) => i.entry.id);
    const invalid = built.invalid.map((i) => i.entry.id);
    for (const id of committed) this.#inFlightBatches.delete(id);
    for (const id of invalid) this.#inFlightBatches.delete(id);
    if (this.#setAside.size > 0) {
      for (const id of committed) this.#setAside.delete(id);
      for (const id of invalid) this.#setAside.delete(id);
    }
    this.#p.source.settle(built, r.plan, r.waiting);
    if (built.head) this.#head = built.head;
    const round = r.plan.round;
    this.#post({
      type: 'block',
      head: built.head,
      committed,
      invalid,
      ...this.#p.source.figures(),
      buildMs: built.buildMs,
      ...(round ? { round: { id: round.id, height: round.height, ts: round.ts } } : {}),
    });
    this.#schedule();
  }

  /** An envelope the HTTP thread answers a client of the executor's endpoint with. */
  sendClient(peer: string, body: Uint8Array): void {
    this.#p.executor?.sendTo(peer, body);
  }

  /** Whether the committer stopped for a failure (see #fail): its writes in flight may never settle. */
  get failed(): boolean {
    return this.#failed;
  }

  async close(): Promise<void> {
    this.#closing = true;
    this.#clearTimer();
    this.#p.consensus.close();
    await this.#p.executor?.close();
    // After a failure nothing more is written, and what was in flight is redone by the next
    // committer from the source: waiting for it could mean waiting for ever (lmdb-js settles
    // none of the writes of a transaction whose pages it could not write).
    if (this.#failed) return;
    await this.#building;
    await this.#commits;
    await this.#p.source.close();
  }
}
