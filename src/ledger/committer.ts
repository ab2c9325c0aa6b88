/**
 * The committer: the single writer of ledger data, running in its own thread. It keeps
 * the durable pending pool, orders pending batches into blocks, executes them, applies
 * the block's writes to the Merkle tree, signs the block and commits block, indexes,
 * receipts, state records, invalid verdicts, read model and the new head in ONE LMDB
 * transaction. It also keeps the rolling average that drives back-pressure.
 *
 * Blocks are pipelined: block N+1 is built on block N's state while N's transaction is
 * still being written and synced. Records of blocks not yet durable are served from an
 * in-memory overlay, and a block's event is posted only once its transaction is durable.
 */
import protobuf from 'protobufjs';
import type { Database, RootDatabase } from 'lmdb';
import { Batch, BlockHeader, TransactionHeader, TransactionReceipt, encode, type BatchMsg, type TransactionHeaderMsg } from '../proto/index.js';
import { sha256, type Signer } from '../crypto/secp256k1.js';
import { MerkleTree, EMPTY_ROOT } from '../state/merkle.js';
import { openLedgerStores, HEAD_KEY, ReadModelDbs, type ChainHead, type InvalidRecord, type LedgerStores } from '../store/ledgerStores.js';
import { projectors, readModelDbNames, type ReadModelWriter } from '../data-api/read-model/index.js';
import { BlockExecutor, type Receipt } from './executor.js';
import { buildBatch, buildTransaction } from './build.js';
import { proposalPayload, settingsTxnAddresses } from '../families/settings.js';
import type { CommitterOptions, FromCommitter } from './protocol.js';
import { log } from '../log.js';
import { decodeSegment } from '../store/pendingPool.js';
import { faultPoint, type FaultPoint } from '../store/testFaults.js';
import { writeFailure } from '../store/errors.js';

export const NULL_BLOCK_ID = '0000000000000000';
/** Rolling-average window of the back-pressure limit (samples of batches per block). */
const QUEUE_SAMPLES = 5;
/**
 * Blocks built but not yet durable. A slot is held until its block is flushed to disk, so
 * with fsync latency in the way four keep the committer building while earlier blocks
 * sync (two measured ~12% fewer transactions/s with 10-transaction batches). More only
 * grows the overlay and the delay of block events.
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

interface PendingEntry {
  /** Position in the order of arrival (also the key of its segment plus its index). */
  seq: number;
  /** Key of the pending-pool record (segment) that holds it; -1 for genesis. */
  seg: number;
  id: string;
  bytes: Uint8Array;
  /** When the committer took it (ms since the epoch): start of its dependency wait. */
  acceptedAt: number;
  /**
   * Tip (block id) at which it last waited on a dependency. Until the tip moves no
   * transaction was committed since, so the batch still waits and is not re-executed.
   */
  waitTip?: string;
}

/** A block (or a set of verdicts) computed in memory, ready to be written. */
interface Built {
  /** The head this round was built on: it must still be the stored head when it is written. */
  parent: ChainHead;
  head: ChainHead | null;
  included: Array<{ entry: PendingEntry; batch: BatchMsg; receipts: Receipt[] }>;
  invalid: Array<{ entry: PendingEntry; record: InvalidRecord }>;
  merkleWrites: Array<[Buffer, Buffer]>;
  blockBytes: Uint8Array | null;
  stateWrites: Map<string, Uint8Array | null>;
  txnIds: string[];
  /** Pending-pool length when the round started (for the rolling average). */
  poolLen: number;
  buildMs: number;
}

/** Reads Merkle records from the overlay of blocks in flight, then from LMDB. */
class OverlayRecords {
  readonly map = new Map<string, Buffer>();
  constructor(private readonly db: Database<Buffer, Buffer>) {}
  getBinaryFast(key: Buffer): Buffer | undefined {
    return this.map.size ? (this.map.get(key.toString('latin1')) ?? this.db.getBinaryFast(key)) : this.db.getBinaryFast(key);
  }
  getBinary(key: Buffer): Buffer | undefined {
    return this.map.size ? (this.map.get(key.toString('latin1')) ?? this.db.getBinary(key)) : this.db.getBinary(key);
  }
}

export class Committer {
  readonly #s: LedgerStores;
  readonly #tree: MerkleTree;
  readonly #overlay: OverlayRecords;
  readonly #signer: Signer;
  readonly #opts: CommitterOptions;
  readonly #post: (m: FromCommitter) => void;
  readonly #pending: RootDatabase<Buffer, number>;
  readonly #readModel: ReadModelWriter;
  /** Last durable head. */
  #head!: ChainHead;
  /** Head of the last block built (durable or not): the parent of the next one. */
  #tip!: ChainHead;
  readonly #queue: PendingEntry[] = [];
  readonly #queued = new Set<string>();
  /** Batch and transaction ids of blocks built but not yet durable. */
  readonly #inFlightBatches = new Set<string>();
  readonly #inFlightTxns = new Set<string>();
  #inFlight = 0;
  #commits: Promise<void> = Promise.resolve();
  /** Next sequence number after those found in the pending pool at start. */
  #nextSeq = 0;
  /** Unsettled batches per pending-pool segment. */
  readonly #segments = new Map<number, number>();
  readonly #samples: number[];
  #avg: number;
  #timer: NodeJS.Timeout | null = null;
  #lastBlockAt = 0;
  #closing = false;
  /** Set when a write failed: nothing more is built, written or settled. */
  #failed = false;
  /** Highest sequence number durable in the ledger meta store (see SEQ_KEY). */
  #seqMark = 0;
  readonly #dependencyWaitMs: number;
  readonly #writeFault: FaultPoint | null = faultPoint('ledger.write');

  constructor(
    root: RootDatabase,
    pending: RootDatabase<Buffer, number>,
    signer: Signer,
    opts: CommitterOptions,
    post: (m: FromCommitter) => void,
  ) {
    this.#s = openLedgerStores(root);
    this.#pending = pending;
    this.#overlay = new OverlayRecords(this.#s.merkle);
    this.#tree = new MerkleTree(this.#overlay as unknown as Database<Buffer, Buffer>);
    this.#signer = signer;
    this.#opts = opts;
    this.#post = post;
    this.#dependencyWaitMs = opts.dependencyWaitMs ?? DEFAULT_DEPENDENCY_WAIT_MS;
    this.#samples = [opts.queueInitialAverage];
    this.#avg = opts.queueInitialAverage;
    const dbs = new ReadModelDbs(root);
    for (const name of readModelDbNames) dbs.db(name);
    this.#readModel = {
      put: (db, key, value) => void dbs.db(db).put(key, value),
      remove: (db, key) => void dbs.db(db).remove(key),
      get: (db, key) => dbs.db(db).get(key),
    };
  }

  get queueLimit(): number {
    return this.#opts.queueMultiplier * this.#avg;
  }

  async init(): Promise<void> {
    const head = this.#s.meta.get(HEAD_KEY) as ChainHead | undefined;
    this.#head = head ?? (await this.#genesis());
    this.#tip = this.#head;
    // The minimum block interval counts from start-up (genesis or restart) too.
    this.#lastBlockAt = Date.now();
    const settled: number[] = [];
    this.#seqMark = (this.#s.meta.get(SEQ_KEY) as number | undefined) ?? 0;
    this.#nextSeq = this.#seqMark;
    const now = Date.now();
    // Keys below 0 are the pool's own records (its identity), not segments.
    for (const { key, value } of this.#pending.getRange({ start: 0 })) {
      let live = 0;
      decodeSegment(value).forEach((bytes, i) => {
        const seq = key + i;
        this.#nextSeq = Math.max(this.#nextSeq, seq + 1);
        const id = (Batch.decode(bytes) as unknown as BatchMsg).headerSignature;
        const verdict = this.#s.invalid.get(id);
        if (this.#queued.has(id) || this.#s.batchIndex.doesExist(id) || (verdict?.seq !== undefined && verdict.seq >= seq)) return;
        this.#queue.push({ seq, seg: key, id, bytes, acceptedAt: now });
        this.#queued.add(id);
        live++;
      });
      if (live) this.#segments.set(key, live);
      else settled.push(key);
    }
    if (settled.length) await this.#dropPending(settled);
    this.#post({
      type: 'ready',
      head: this.#head,
      pendingIds: this.#queue.map((e) => e.id),
      nextSeq: this.#nextSeq,
      queueLimit: this.queueLimit,
    });
    this.#schedule();
  }

  /** Makes block 0 from the node's own settings batch, on first start only. */
  async #genesis(): Promise<ChainHead> {
    const props: Array<[string, string]> = [
      ['sawtooth.settings.vote.authorized_keys', this.#signer.publicKey],
      ['sawtooth.consensus.algorithm.name', 'Devmode'],
      ['sawtooth.consensus.algorithm.version', '0.1'],
    ];
    const txns = props.map(([k, v]) =>
      buildTransaction(this.#signer, {
        familyName: 'sawtooth_settings',
        familyVersion: '1.0',
        ...settingsTxnAddresses(k),
        payload: proposalPayload(k, v, ''),
        nonce: '',
      }),
    );
    const batch = buildBatch(this.#signer, txns);
    const entry: PendingEntry = { seq: -1, seg: -1, id: batch.id, bytes: batch.bytes, acceptedAt: Date.now() };
    const pre: ChainHead = { blockId: NULL_BLOCK_ID, blockNum: -1, stateRoot: EMPTY_ROOT };
    await this.#s.root.transaction(() => {
      for (const [k, v] of MerkleTree.emptyRootWrites()) this.#s.merkle.put(k, v);
    });
    const built = this.#execute(pre, [entry], Infinity, Buffer.from('Genesis'));
    if (!built.head || built.invalid.length) throw new Error('genesis batch failed to execute');
    await this.#write(built);
    return built.head;
  }

  /**
   * Takes batches the HTTP thread has already written, durably, to the pending pool as
   * segment `seg` (batch i has sequence number seg + i). Duplicates of queued batches are
   * dropped (they stay settled through the first copy).
   */
  enqueue(seg: number, batches: Array<{ id: string; bytes: Uint8Array }>): void {
    let live = 0;
    const now = Date.now();
    batches.forEach((b, i) => {
      if (this.#queued.has(b.id) || this.#s.batchIndex.doesExist(b.id)) return;
      this.#queued.add(b.id);
      this.#queue.push({ seq: seg + i, seg, id: b.id, bytes: b.bytes, acceptedAt: now });
      live++;
    });
    if (live) this.#segments.set(seg, live);
    else void this.#dropPending([seg]);
    this.#schedule();
  }

  #schedule(delay?: number): void {
    if (this.#timer || this.#closing || this.#failed || this.#inFlight >= MAX_IN_FLIGHT) return;
    if (this.#queue.length <= this.#inFlightBatches.size) return;
    const wait = delay ?? Math.max(0, this.#lastBlockAt + this.#opts.minBlockIntervalMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      try {
        this.#round();
      } catch (err) {
        this.#fail(`block production failed: ${err instanceof Error ? err.message : String(err)}`);
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
    const max = this.#opts.maxBatchesPerBlock || Infinity;
    const consensusFor = (ids: string[]): Buffer => Buffer.concat([Buffer.from('Devmode'), sha256(ids.join(''))]);
    const built = this.#execute(this.#tip, this.#queue, max, consensusFor);
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
    for (const [k, v] of built.merkleWrites) this.#overlay.map.set(k.toString('latin1'), v);
    this.#inFlight++;
    // Transactions are written in order; chain each completion after the previous one.
    const written = this.#write(built);
    written.catch(() => undefined); // handled in order below
    this.#commits = this.#commits.then(() => written).then(
      () => this.#settle(built),
      async (err: unknown) => this.#fail(`${built.head ? `block ${built.head.blockNum}` : 'verdict'} write failed: ${(await writeFailure(err)).message}`),
    );
    this.#schedule();
  }

  /**
   * A write failed: the blocks built on it are in memory only, so the committer stops
   * here (nothing more is built, written or settled) and reports it; the node stops
   * acknowledging batches and exits, and the restart resumes from the durable head with
   * every unsettled batch still in the pending pool. Later blocks already queued for
   * writing are refused by #write's parent check, so the chain never gets a gap.
   */
  /** Stops the committer for a failure found outside it (an unhandled error in its thread). */
  halt(message: string): void {
    this.#fail(message);
  }

  #fail(message: string): void {
    if (this.#failed) return;
    this.#failed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#post({ type: 'fatal', message });
  }

  /** Runs once a built round is durable: publish it and release its bookkeeping. */
  #settle(built: Built): void {
    if (this.#failed) return;
    this.#inFlight--;
    for (const [k] of built.merkleWrites) this.#overlay.map.delete(k.toString('latin1'));
    for (const id of built.txnIds) this.#inFlightTxns.delete(id);
    const committed = built.included.map((i) => i.entry.id);
    const invalid = built.invalid.map((i) => i.entry.id);
    const done = new Set([...committed, ...invalid]);
    let w = 0;
    for (const e of this.#queue) if (!done.has(e.id)) this.#queue[w++] = e;
    this.#queue.length = w;
    for (const id of done) {
      this.#queued.delete(id);
      this.#inFlightBatches.delete(id);
    }
    // Only now that the block (or verdict) is durable may the batches leave the pending pool.
    const emptied: number[] = [];
    for (const { entry } of [...built.included, ...built.invalid]) {
      if (entry.seg < 0) continue;
      const left = (this.#segments.get(entry.seg) ?? 1) - 1;
      if (left > 0) this.#segments.set(entry.seg, left);
      else {
        this.#segments.delete(entry.seg);
        emptied.push(entry.seg);
      }
    }
    if (emptied.length) void this.#dropPending(emptied);
    if (built.head) {
      this.#head = built.head;
      this.#updateAverage(committed.length, built.poolLen);
    }
    this.#post({ type: 'block', head: built.head, committed, invalid, pendingCount: this.#queue.length, queueLimit: this.queueLimit });
    this.#schedule();
  }

  #updateAverage(consumed: number, poolLen: number): void {
    if (consumed === 0) return;
    if (Math.max(poolLen - consumed, 0) > this.#avg || consumed > this.#avg) {
      this.#samples.push(consumed);
      if (this.#samples.length > QUEUE_SAMPLES) this.#samples.shift();
      this.#avg = Math.max(1, Math.floor(this.#samples.reduce((a, b) => a + b, 0) / this.#samples.length));
    }
  }

  /**
   * Executes `entries` not already in flight on top of `parent`, until `max` of them are
   * settled (included or invalid), and computes the block (if any batch is valid). A
   * batch that waits on a dependency is skipped, and settled INVALID once it has waited
   * longer than the dependency wait.
   */
  #execute(parent: ChainHead, entries: PendingEntry[], max: number, consensus: Buffer | ((ids: string[]) => Buffer)): Built {
    const tStart = performance.now();
    const now = Date.now();
    const exec = new BlockExecutor({ get: (a) => this.#tree.get(parent.stateRoot, a) });
    const built: Built = {
      parent,
      head: null,
      included: [],
      invalid: [],
      merkleWrites: [],
      blockBytes: null,
      stateWrites: exec.writes,
      txnIds: [],
      poolLen: this.#queue.length - this.#inFlightBatches.size,
      buildMs: 0,
    };
    const committed = (id: string): boolean => this.#inFlightTxns.has(id) || this.#s.txnIndex.doesExist(id);
    for (const entry of entries) {
      if (built.included.length + built.invalid.length >= max) break;
      if (this.#inFlightBatches.has(entry.id)) continue;
      const expired = now - entry.acceptedAt >= this.#dependencyWaitMs;
      if (entry.waitTip === parent.blockId && !expired) continue;
      const batch = Batch.decode(entry.bytes) as unknown as BatchMsg;
      const outcome = exec.executeBatch(batch, committed);
      if (outcome === 'wait') {
        if (!expired) {
          entry.waitTip = parent.blockId;
          continue;
        }
        const missing = missingDependency(batch, (id) => exec.txnIds.has(id) || committed(id));
        const message =
          `Dependency ${missing.dependency} of transaction ${missing.txnId} was not committed within ` +
          `${Math.round(this.#dependencyWaitMs / 1000)} s of the batch's acceptance`;
        built.invalid.push({ entry, record: { invalid_transactions: [{ id: missing.txnId, message, extended_data: '' }], seq: entry.seq } });
        continue;
      }
      if (outcome.ok) {
        built.included.push({ entry, batch, receipts: outcome.receipts });
        for (const t of batch.transactions) built.txnIds.push(t.headerSignature);
      } else {
        const t = outcome.invalid;
        built.invalid.push({
          entry,
          record: {
            invalid_transactions: [{ id: t.id, message: t.message, extended_data: Buffer.from(t.extendedData).toString('base64') }],
            seq: entry.seq,
          },
        });
      }
    }
    if (built.included.length > 0) {
      const sets = new Map<string, Uint8Array>();
      const deletes: string[] = [];
      for (const [a, v] of exec.writes) {
        if (v) sets.set(a, v);
        else deletes.push(a);
      }
      const update = this.#tree.update(parent.stateRoot, sets, deletes);
      built.merkleWrites = update.writes;
      const batchIds = built.included.map((i) => i.entry.id);
      const blockNum = parent.blockNum + 1;
      const headerBytes = encode(BlockHeader, {
        blockNum,
        previousBlockId: parent.blockId,
        signerPublicKey: this.#signer.publicKey,
        batchIds,
        consensus: typeof consensus === 'function' ? consensus(batchIds) : consensus,
        stateRootHash: update.root,
      });
      const blockId = this.#signer.sign(headerBytes);
      const w = protobuf.Writer.create();
      w.uint32(10).bytes(headerBytes).uint32(18).string(blockId);
      for (const i of built.included) w.uint32(26).bytes(i.entry.bytes);
      built.blockBytes = w.finish();
      built.head = { blockId, blockNum, stateRoot: update.root };
    }
    built.buildMs = performance.now() - tStart;
    return built;
  }

  /** Writes a built round in one LMDB transaction; resolves once it is durable. */
  async #write(built: Built): Promise<void> {
    const s = this.#s;
    const { head, blockBytes } = built;
    const t0 = performance.now();
    const prevMark = this.#seqMark;
    let seqMark = prevMark;
    for (const { entry } of built.included) if (entry.seq >= seqMark) seqMark = entry.seq + 1;
    for (const { entry } of built.invalid) if (entry.seq >= seqMark) seqMark = entry.seq + 1;
    this.#seqMark = seqMark;
    // A child transaction: if anything in here throws, none of this round's writes stay
    // in the (shared, batched) LMDB transaction.
    await s.root.childTransaction(() => {
      this.#writeFault?.check();
      // Written only on top of its parent: once a round failed, the rounds built on it fail too.
      const stored = s.meta.get(HEAD_KEY) as ChainHead | undefined;
      if ((stored?.blockId ?? NULL_BLOCK_ID) !== built.parent.blockId) {
        throw new Error(`round built on block ${built.parent.blockNum}, but the stored head is ${stored?.blockNum ?? 'none'}`);
      }
      if (seqMark > prevMark) s.meta.put(SEQ_KEY, seqMark);
      for (const [k, v] of built.merkleWrites) s.merkle.put(k, v);
      if (head && blockBytes) {
        s.blocks.put(head.blockId, Buffer.from(blockBytes));
        s.blockByNum.put(head.blockNum, head.blockId);
        built.included.forEach(({ entry, batch, receipts }, bi) => {
          s.batchIndex.put(entry.id, [head.blockNum, bi]);
          batch.transactions.forEach((t, ti) =>
            s.txnIndex.put(t.headerSignature, [head.blockNum, bi, ti, Buffer.from(encodeReceipt(receipts[ti]!))]),
          );
        });
        s.meta.put(HEAD_KEY, head);
        const info = { blockNum: head.blockNum, blockId: head.blockId, timestamp: Math.floor(Date.now() / 1000) };
        for (const [address, value] of built.stateWrites) {
          for (const p of projectors) {
            if (p.namespaces.some((ns) => address.startsWith(ns))) p.project(address, value ?? undefined, this.#readModel, info);
          }
        }
      }
      for (const { entry, record } of built.invalid) s.invalid.put(entry.id, record);
    });
    // lmdb-js syncs after commit (overlapping sync): a block counts once it is on disk.
    await s.root.flushed;
    if (head) {
      log.debug(
        `block ${head.blockNum}: ${built.included.length} batches, ${built.invalid.length} invalid, ` +
          `build ${built.buildMs.toFixed(1)} ms, write ${(performance.now() - t0).toFixed(1)} ms`,
      );
    }
  }

  /** Removals of settled pending-pool segments still being written (awaited on close). */
  readonly #drops = new Set<Promise<void>>();

  #dropPending(segments: number[]): Promise<void> {
    const p = this.#pending
      .transaction(() => {
        for (const seg of segments) this.#pending.remove(seg);
      })
      .then(
        () => undefined,
        async (err: unknown) => this.#fail(`pending pool cleanup failed: ${(await writeFailure(err)).message}`),
      )
      .finally(() => this.#drops.delete(p));
    this.#drops.add(p);
    return p;
  }

  async close(): Promise<void> {
    this.#closing = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#commits;
    await Promise.all(this.#drops);
  }
}

/** The first dependency of `batch` that is neither earlier in the batch nor `known`. */
function missingDependency(batch: BatchMsg, known: (txnId: string) => boolean): { txnId: string; dependency: string } {
  const earlier = new Set<string>();
  for (const t of batch.transactions) {
    const h = TransactionHeader.decode(t.header) as unknown as TransactionHeaderMsg;
    for (const dep of h.dependencies) if (!earlier.has(dep) && !known(dep)) return { txnId: t.headerSignature, dependency: dep };
    earlier.add(t.headerSignature);
  }
  const first = batch.transactions[0]?.headerSignature ?? '';
  return { txnId: first, dependency: 'unknown' };
}

export function encodeReceipt(r: Receipt): Uint8Array {
  return encode(TransactionReceipt, {
    stateChanges: r.stateChanges,
    events: r.events.map((e) => ({ eventType: e.eventType, attributes: e.attributes, data: e.data })),
    data: r.data,
    transactionId: r.transactionId,
  });
}
