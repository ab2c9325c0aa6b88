/**
 * The committer: the single writer of ledger data, running in its own thread. It keeps
 * the durable pending pool, orders pending batches into blocks, executes them, applies
 * the block's writes to the Merkle tree, signs the block and commits block, indexes,
 * receipts, state records, pending-pool removals and the new head in ONE LMDB
 * transaction. It also keeps the rolling average that drives back-pressure.
 */
import protobuf from 'protobufjs';
import type { RootDatabase } from 'lmdb';
import { Batch, BlockHeader, TransactionReceipt, encode, type BatchMsg } from '../proto/index.js';
import { sha256, type Signer } from '../crypto/secp256k1.js';
import { MerkleTree, EMPTY_ROOT } from '../state/merkle.js';
import { openLedgerStores, HEAD_KEY, ReadModelDbs, type ChainHead, type InvalidRecord, type LedgerStores } from '../store/ledgerStores.js';
import { projectors, readModelDbNames } from '../families/index.js';
import type { ReadModelWriter } from '../families/types.js';
import { BlockExecutor, type Receipt } from './executor.js';
import { buildBatch, buildTransaction } from './build.js';
import { proposalPayload, settingsTxnAddresses } from '../families/settings.js';
import type { CommitterOptions, FromCommitter } from './protocol.js';

export const NULL_BLOCK_ID = '0000000000000000';
/** Rolling-average window of the back-pressure limit (samples of batches per block). */
const QUEUE_SAMPLES = 5;

interface PendingEntry {
  seq: number;
  id: string;
  bytes: Uint8Array;
}

interface RoundResult {
  head: ChainHead | null;
  committed: string[];
  invalid: string[];
}

export class Committer {
  readonly #s: LedgerStores;
  readonly #tree: MerkleTree;
  readonly #signer: Signer;
  readonly #opts: CommitterOptions;
  readonly #post: (m: FromCommitter) => void;
  #head!: ChainHead;
  readonly #queue: PendingEntry[] = [];
  readonly #queued = new Set<string>();
  #nextSeq = 0;
  readonly #samples: number[];
  #avg: number;
  #producing: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #lastBlockAt = 0;
  #closing = false;
  readonly #readModel: ReadModelWriter;

  constructor(root: RootDatabase, signer: Signer, opts: CommitterOptions, post: (m: FromCommitter) => void) {
    this.#s = openLedgerStores(root);
    this.#tree = new MerkleTree(this.#s.merkle);
    this.#signer = signer;
    this.#opts = opts;
    this.#post = post;
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
    // The minimum block interval counts from start-up (genesis or restart) too.
    this.#lastBlockAt = Date.now();
    for (const { key, value } of this.#s.pending.getRange({})) {
      const b = Batch.decode(value) as unknown as BatchMsg;
      this.#queue.push({ seq: key, id: b.headerSignature, bytes: value });
      this.#queued.add(b.headerSignature);
      this.#nextSeq = key + 1;
    }
    this.#post({ type: 'ready', head: this.#head, pendingCount: this.#queue.length, queueLimit: this.queueLimit });
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
    const entry: PendingEntry = { seq: -1, id: batch.id, bytes: batch.bytes };
    const pre: ChainHead = { blockId: NULL_BLOCK_ID, blockNum: -1, stateRoot: EMPTY_ROOT };
    await this.#s.root.transaction(() => {
      for (const [k, v] of MerkleTree.emptyRootWrites()) this.#s.merkle.put(k, v);
    });
    const result = await this.#build(pre, [entry], Buffer.from('Genesis'));
    if (!result.head || result.invalid.length) throw new Error('genesis batch failed to execute');
    return result.head;
  }

  submit(reqId: number, batches: Array<{ id: string; bytes: Uint8Array }>): void {
    const fresh: PendingEntry[] = [];
    for (const b of batches) {
      if (this.#queued.has(b.id) || this.#s.batchIndex.doesExist(b.id)) continue;
      this.#queued.add(b.id);
      fresh.push({ seq: this.#nextSeq++, id: b.id, bytes: b.bytes });
    }
    if (fresh.length === 0) {
      this.#post({ type: 'accepted', reqId, pendingCount: this.#queue.length });
      return;
    }
    const writes = this.#s.root.transaction(() => {
      for (const e of fresh) {
        this.#s.pending.put(e.seq, Buffer.from(e.bytes));
        this.#s.pendingById.put(e.id, e.seq);
        this.#s.invalid.remove(e.id);
      }
    });
    writes.then(
      () => {
        this.#queue.push(...fresh);
        this.#post({ type: 'accepted', reqId, pendingCount: this.#queue.length });
        this.#schedule();
      },
      (err: unknown) => {
        for (const e of fresh) this.#queued.delete(e.id);
        this.#post({ type: 'fatal', message: `pending pool write failed: ${String(err)}` });
      },
    );
  }

  #schedule(): void {
    if (this.#producing || this.#timer || this.#closing || this.#queue.length === 0) return;
    const delay = Math.max(0, this.#lastBlockAt + this.#opts.minBlockIntervalMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#producing = this.#round()
        .catch((err: unknown) => this.#post({ type: 'fatal', message: `block production failed: ${String(err)}` }))
        .finally(() => {
          this.#producing = null;
          this.#schedule();
        });
    }, delay);
  }

  async #round(): Promise<void> {
    const max = this.#opts.maxBatchesPerBlock || Infinity;
    const take = this.#queue.slice(0, Math.min(this.#queue.length, max));
    const poolLen = this.#queue.length;
    const consensusFor = (ids: string[]): Buffer => Buffer.concat([Buffer.from('Devmode'), sha256(ids.join(''))]);
    const result = await this.#build(this.#head, take, consensusFor);
    const done = new Set([...result.committed, ...result.invalid]);
    if (done.size) {
      let w = 0;
      for (const e of this.#queue) if (!done.has(e.id)) this.#queue[w++] = e;
      this.#queue.length = w;
      for (const id of done) this.#queued.delete(id);
    }
    if (result.head) {
      this.#head = result.head;
      this.#lastBlockAt = Date.now();
      this.#updateAverage(result.committed.length, poolLen);
    }
    this.#post({
      type: 'block',
      head: result.head,
      committed: result.committed,
      invalid: result.invalid,
      pendingCount: this.#queue.length,
      queueLimit: this.queueLimit,
    });
    // Batches still waiting on dependencies stay queued; do not spin on them.
    if (done.size === 0) await new Promise((r) => setTimeout(r, 50));
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
   * Executes `entries` on top of `parent`, and commits either a block (when at least one
   * batch is valid) or just the invalid verdicts, in one LMDB transaction.
   */
  async #build(
    parent: ChainHead,
    entries: PendingEntry[],
    consensus: Buffer | ((ids: string[]) => Buffer),
  ): Promise<RoundResult> {
    const s = this.#s;
    const exec = new BlockExecutor({ get: (a) => this.#tree.get(parent.stateRoot, a) });
    const included: Array<{ entry: PendingEntry; batch: BatchMsg; receipts: Receipt[] }> = [];
    const invalid: Array<{ entry: PendingEntry; record: InvalidRecord }> = [];
    const committed = (id: string): boolean => s.txnIndex.doesExist(id);
    for (const entry of entries) {
      const batch = Batch.decode(entry.bytes) as unknown as BatchMsg;
      const outcome = exec.executeBatch(batch, committed);
      if (outcome === 'wait') continue;
      if (outcome.ok) included.push({ entry, batch, receipts: outcome.receipts });
      else {
        const t = outcome.invalid;
        invalid.push({
          entry,
          record: { invalid_transactions: [{ id: t.id, message: t.message, extended_data: Buffer.from(t.extendedData).toString('base64') }] },
        });
      }
    }
    let head: ChainHead | null = null;
    let blockBytes: Uint8Array | null = null;
    let merkleWrites: Array<[Buffer, Buffer]> = [];
    if (included.length > 0) {
      const sets = new Map<string, Uint8Array>();
      const deletes: string[] = [];
      for (const [a, v] of exec.writes) {
        if (v) sets.set(a, v);
        else deletes.push(a);
      }
      const update = this.#tree.update(parent.stateRoot, sets, deletes);
      merkleWrites = update.writes;
      const batchIds = included.map((i) => i.entry.id);
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
      for (const i of included) w.uint32(26).bytes(i.entry.bytes);
      blockBytes = w.finish();
      head = { blockId, blockNum, stateRoot: update.root };
    }
    await s.root.transaction(() => {
      for (const [k, v] of merkleWrites) s.merkle.put(k, v);
      if (head && blockBytes) {
        s.blocks.put(head.blockId, Buffer.from(blockBytes));
        s.blockByNum.put(head.blockNum, head.blockId);
        included.forEach(({ entry, batch, receipts }, bi) => {
          s.batchIndex.put(entry.id, [head!.blockNum, bi]);
          batch.transactions.forEach((t, ti) => s.txnIndex.put(t.headerSignature, [head!.blockNum, bi, ti]));
          for (const r of receipts) s.receipts.put(r.transactionId, Buffer.from(encodeReceipt(r)));
        });
        s.meta.put(HEAD_KEY, head);
        const info = { blockNum: head.blockNum, blockId: head.blockId, timestamp: Math.floor(Date.now() / 1000) };
        for (const [address, value] of exec.writes) {
          for (const p of projectors) {
            if (p.namespaces.some((ns) => address.startsWith(ns))) p.project(address, value ?? undefined, this.#readModel, info);
          }
        }
      }
      for (const { entry, record } of invalid) s.invalid.put(entry.id, record);
      for (const { entry } of [...included, ...invalid]) {
        if (entry.seq >= 0) s.pending.remove(entry.seq);
        s.pendingById.remove(entry.id);
      }
    });
    return { head, committed: included.map((i) => i.entry.id), invalid: invalid.map((i) => i.entry.id) };
  }

  async close(): Promise<void> {
    this.#closing = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#producing) await this.#producing;
  }
}

export function encodeReceipt(r: Receipt): Uint8Array {
  return encode(TransactionReceipt, {
    stateChanges: r.stateChanges,
    events: r.events.map((e) => ({ eventType: e.eventType, attributes: e.attributes, data: e.data })),
    data: r.data,
    transactionId: r.transactionId,
  });
}
