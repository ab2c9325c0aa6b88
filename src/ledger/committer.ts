/**
 * The committer: the single writer of a ledger's data, running in its own thread. It
 * takes pending batches from the batch pool, has the block builder execute them into a
 * block on top of the tip, and the chain writer write it (one LMDB transaction per
 * block); once a block is durable its batches leave the pool and its event goes to the
 * HTTP thread.
 *
 * Blocks are pipelined: block N+1 is built on block N's state while N's transaction is
 * still being written and synced (the chain writer stages a block's state records until
 * they are durable), and a block's event is posted only once its transaction is durable.
 */
import type { RootDatabase } from 'lmdb';
import { sha256, type Signer } from '../crypto/secp256k1.js';
import { openLedgerStores, type ChainHead, type LedgerStores } from '../store/ledger-stores.js';
import { faultPoint } from '../testing/faults.js';
import { writeFailure } from '../store/errors.js';
import { log } from '../log.js';
import type { CommitterFaultCode, CommitterOptions, FromCommitter } from './protocol.js';
import { NODE_LEDGER, type LedgerDescription } from './description.js';
import { familyLookup, projectorEntries } from './catalog.js';
import { BlockBuilder, type BuiltBlock } from './block-builder.js';
import { ChainWriter } from './chain-writer.js';
import { BatchPool, type PoolEntry } from './batch-pool.js';
import { makeGenesis } from './genesis.js';
import { ComponentServer } from '../component/server.js';

export { NULL_BLOCK_ID } from './chain-writer.js';

/**
 * Blocks built but not yet durable. A slot is held until its block is flushed to disk, so
 * with fsync latency in the way four keep the committer building while earlier blocks
 * sync (two measured ~12% fewer transactions/s with 10-transaction batches). More only
 * grows the staged state and the delay of block events.
 */
const MAX_IN_FLIGHT = 4;
/** Back-off when every pending batch waits on a dependency that is not committed yet. */
const DEPENDENCY_RETRY_MS = 50;
/** Default of CommitterOptions.dependencyWaitMs. */
export const DEFAULT_DEPENDENCY_WAIT_MS = 60_000;
/**
 * Meta key of the pending-pool sequence high-water mark: every sequence number below it
 * has been used. Written with each block or verdict, so that numbering never restarts
 * below a stored verdict's `seq` (which would make a resubmitted batch look settled).
 */
export const SEQ_KEY = 'next_seq';

/** A built round and the pool length when it started (for the rolling average). */
type Round = BuiltBlock<PoolEntry> & { poolLen: number };

export class Committer {
  readonly #s: LedgerStores;
  readonly #signer: Signer;
  readonly #opts: CommitterOptions;
  readonly #post: (m: FromCommitter) => void;
  readonly #pool: BatchPool;
  readonly #builder: BlockBuilder;
  readonly #writer: ChainWriter;
  readonly #description: LedgerDescription;
  /** Last durable head. */
  #head!: ChainHead;
  /** Head of the last block built (durable or not): the parent of the next one. */
  #tip!: ChainHead;
  /** Batch and transaction ids of blocks built but not yet durable. */
  readonly #inFlightBatches = new Set<string>();
  readonly #inFlightTxns = new Set<string>();
  #inFlight = 0;
  #commits: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  #lastBlockAt = 0;
  #closing = false;
  /** Set when a write failed: nothing more is built, written or settled. */
  #failed = false;
  /** Highest sequence number durable in the ledger meta store (see SEQ_KEY). */
  #seqMark = 0;
  readonly #dependencyWaitMs: number;
  /** The component endpoint (external transaction processors), when enabled. */
  readonly #component: ComponentServer | null;
  /** A round waiting on a transaction processor; no other round starts meanwhile. */
  #building: Promise<void> | null = null;

  constructor(root: RootDatabase, pending: RootDatabase<Buffer, number>, signer: Signer, opts: CommitterOptions, post: (m: FromCommitter) => void) {
    const d = opts.description ?? NODE_LEDGER;
    this.#description = d;
    this.#s = openLedgerStores(root, d.storePrefix);
    this.#signer = signer;
    this.#opts = opts;
    this.#post = post;
    this.#dependencyWaitMs = opts.dependencyWaitMs ?? DEFAULT_DEPENDENCY_WAIT_MS;
    this.#writer = new ChainWriter({
      stores: this.#s,
      leafEncoding: d.leafEncoding,
      projectors: projectorEntries(d.projectors),
      // A committer started by a recovery runs without the test hook's fault: the hook models one failure.
      writeFault: opts.recovery ? null : faultPoint('ledger.write'),
      checkpointEvery: opts.stateCheckpointBlocks,
      checkpointChunk: opts.stateCheckpointChunk,
      stallMs: opts.storageStallMs,
    });
    this.#component = opts.component
      ? new ComponentServer(opts.component, {
          message: (peer, body) => post({ type: 'client', peer, body }),
          gone: (peer, why) => post({ type: 'client-gone', peer, why }),
        })
      : null;
    this.#builder = new BlockBuilder(this.#writer.state, signer, familyLookup(d.families), this.#component ?? undefined);
    this.#pool = new BatchPool(pending, {
      queueMultiplier: opts.queueMultiplier,
      queueInitialAverage: opts.queueInitialAverage,
      onDropFailed: async (err) => this.#fail('PENDING_CLEANUP_FAILED', `pending pool cleanup failed: ${(await writeFailure(err)).message}`),
    });
  }

  get queueLimit(): number {
    return this.#pool.queueLimit;
  }

  async init(): Promise<void> {
    this.#writer.loadState();
    // Built from the id records now rather than on the first lookup (~0.5 s at a million batches).
    this.#writer.ids.syncComplete(this.#writer.storedHead()?.blockNum, `${this.#s.prefix}.block_ids`);
    this.#head = this.#writer.storedHead() ?? (await makeGenesis(this.#signer, this.#description.genesis, this.#builder, this.#writer));
    this.#tip = this.#head;
    // The minimum block interval counts from start-up (genesis or restart) too.
    this.#lastBlockAt = Date.now();
    this.#seqMark = (this.#s.meta.get(SEQ_KEY) as number | undefined) ?? 0;
    await this.#pool.recover(this.#seqMark, (id, seq) => {
      if (this.#writer.ids.hasBatch(id)) return true;
      const verdict = this.#s.invalid.get(id);
      return verdict?.seq !== undefined && verdict.seq >= seq;
    });
    // A start is also how the ledger recovers from a storage alarm: it counts only once the
    // ledger file takes a durable write again.
    await this.#writer.probe();
    const componentEndpoint = this.#component ? await this.#component.start() : undefined;
    this.#post({
      type: 'ready',
      componentEndpoint,
      head: this.#head,
      pendingIds: this.#pool.queue.map((e) => e.id),
      nextSeq: this.#pool.nextSeq,
      queueLimit: this.queueLimit,
    });
    this.#schedule();
  }

  /**
   * Takes batches the HTTP thread has already written, durably, to the pending pool as
   * segment `seg` (batch i has sequence number seg + i).
   */
  enqueue(seg: number, batches: Array<{ id: string; bytes: Uint8Array }>): void {
    this.#pool.add(seg, batches, (id) => this.#writer.ids.hasBatch(id));
    this.#schedule();
  }

  #schedule(delay?: number): void {
    if (this.#timer || this.#building || this.#closing || this.#failed || this.#inFlight >= MAX_IN_FLIGHT) return;
    if (this.#pool.length <= this.#inFlightBatches.size) return;
    const wait = delay ?? Math.max(0, this.#lastBlockAt + this.#opts.minBlockIntervalMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      try {
        this.#round();
      } catch (err) {
        this.#fail('BUILD_FAILED', `block production failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }, wait);
  }

  /**
   * Builds the next block from the pending batches not already in a block in flight, in
   * order of arrival, looking past batches that wait on a dependency (they neither fill
   * the block nor hold back the batches behind them).
   */
  #round(): void {
    if (this.#closing || this.#failed) return;
    const poolLen = this.#pool.length - this.#inFlightBatches.size;
    const out = this.#builder.start(this.#tip, this.#pool.queue, {
      max: this.#opts.maxBatchesPerBlock || Infinity,
      consensus: (ids) => Buffer.concat([Buffer.from('Devmode'), sha256(ids.join(''))]),
      isCommittedTxn: (id) => this.#inFlightTxns.has(id) || this.#writer.ids.hasTxn(id),
      skip: (id) => this.#inFlightBatches.has(id),
      dependencyWaitMs: this.#dependencyWaitMs,
    });
    if (out instanceof Promise) {
      // A batch waits on a transaction processor (src/component): the round ends when it answers.
      this.#building = out.then(
        (b) => {
          this.#building = null;
          this.#roundBuilt(Object.assign(b, { poolLen }));
        },
        (err: unknown) => {
          this.#building = null;
          this.#fail('BUILD_FAILED', `block production failed: ${err instanceof Error ? err.message : String(err)}`);
        },
      );
      return;
    }
    this.#roundBuilt(Object.assign(out, { poolLen }));
  }

  #roundBuilt(built: Round): void {
    if (this.#closing || this.#failed) return;
    if (built.included.length === 0 && built.invalid.length === 0) {
      // Everything waits on dependencies: try again a little later.
      this.#schedule(DEPENDENCY_RETRY_MS);
      return;
    }
    if (built.head) {
      this.#tip = built.head;
      this.#lastBlockAt = Date.now();
    }
    for (const { entry } of built.included) this.#inFlightBatches.add(entry.id);
    for (const { entry } of built.invalid) this.#inFlightBatches.add(entry.id);
    for (const id of built.txnIds) this.#inFlightTxns.add(id);
    this.#writer.stage(built);
    this.#inFlight++;
    // Transactions are written in order; chain each completion after the previous one.
    const written = this.#write(built);
    written.catch(() => undefined); // handled in order below
    this.#commits = this.#commits
      .then(() => written)
      .then(
        () => this.#settle(built),
        async (err: unknown) =>
          this.#fail('WRITE_FAILED', `${built.head ? `block ${built.head.blockNum}` : 'verdict'} write failed: ${(await writeFailure(err)).message}`),
      );
    this.#schedule();
  }

  /** Writes a round with the new sequence mark; resolves once it is durable. */
  async #write(built: Round): Promise<void> {
    const t0 = performance.now();
    const prevMark = this.#seqMark;
    let seqMark = prevMark;
    for (const { entry } of built.included) if (entry.seq >= seqMark) seqMark = entry.seq + 1;
    for (const { entry } of built.invalid) if (entry.seq >= seqMark) seqMark = entry.seq + 1;
    this.#seqMark = seqMark;
    await this.#writer.write(built, seqMark > prevMark ? [[SEQ_KEY, seqMark]] : undefined);
    const head = built.head;
    if (head) {
      log.debug(
        `block ${head.blockNum}: ${built.included.length} batches, ${built.invalid.length} invalid, ` +
          `build ${built.buildMs.toFixed(1)} ms, write ${(performance.now() - t0).toFixed(1)} ms`,
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
   * A write failed: the blocks built on it are in memory only, so the committer stops
   * here (nothing more is built, written or settled) and reports it; the node stops
   * acknowledging batches and exits, and the restart resumes from the durable head with
   * every unsettled batch still in the pending pool. Later blocks already queued for
   * writing are refused by the chain writer's parent check, so the chain never gets a gap.
   */
  #fail(code: CommitterFaultCode, message: string): void {
    if (this.#failed) return;
    this.#failed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#post({ type: 'fatal', code, message });
  }

  /** Runs once a built round is durable: publish it and release its bookkeeping. */
  #settle(built: Round): void {
    if (this.#failed) return;
    this.#inFlight--;
    this.#writer.unstage(built);
    for (const id of built.txnIds) this.#inFlightTxns.delete(id);
    const committed = built.included.map((i) => i.entry.id);
    const invalid = built.invalid.map((i) => i.entry.id);
    const entries = [...built.included.map((i) => i.entry), ...built.invalid.map((i) => i.entry)];
    for (const e of entries) this.#inFlightBatches.delete(e.id);
    // Only now that the block (or verdict) is durable may the batches leave the pending pool.
    this.#pool.settle(entries);
    if (built.head) {
      this.#head = built.head;
      this.#pool.noteBlock(committed.length, built.poolLen);
    }
    this.#post({
      type: 'block',
      head: built.head,
      committed,
      invalid,
      pendingCount: this.#pool.length,
      queueLimit: this.queueLimit,
      buildMs: built.buildMs,
    });
    this.#schedule();
  }

  /** An envelope the HTTP thread answers a client of the component endpoint with. */
  sendClient(peer: string, body: Uint8Array): void {
    this.#component?.sendTo(peer, body);
  }

  async close(): Promise<void> {
    this.#closing = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#component?.close();
    await this.#building;
    await this.#commits;
    await this.#pool.close();
  }
}
