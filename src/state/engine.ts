/**
 * The committer's state: the Merkle tree whose records made since the last checkpoint
 * live in memory, over the checkpointed records in LMDB.
 *
 * A block's transaction writes only its delta (deltas.ts) and its root's index entry. Every
 * `checkpointEvery` blocks, the block's transaction also writes the Merkle records of its
 * root that are not stored yet (only those the root reaches: the records of roots in
 * between, superseded since, are never written), and the in-memory records of blocks up
 * to it are dropped once it is durable. On start, the state is the head's checkpoint with
 * the deltas after it applied again (each checked against the root its block recorded),
 * so a kill at any point loses nothing that was durable.
 *
 * Why every record the next roots need is stored or in memory after a drop: a block's
 * update reads only records reachable from its parent's root (or ones it makes), so every
 * record of roots after checkpoint K is either reachable from K's root (written with the
 * checkpoint, or stored before) or made by a block after K (kept: tagged with the newest
 * block that made it).
 */
import type { Database } from 'lmdb';
import type { ChainHead } from '../store/ledger-stores.js';
import { MerkleTree, CorruptStateError, EMPTY_ROOT } from './merkle.js';
import type { LeafEncoding } from './node.js';
import { BRANCH_HEAD, ENTRY, parseRecord } from './records.js';
import { CHECKPOINT, decodeDelta, deltaHead, encodeDelta, type Checkpoint, type StateStores } from './deltas.js';

/** Default blocks between checkpoints. */
export const DEFAULT_CHECKPOINT_BLOCKS = 256;

/**
 * Default bytes of Merkle records held in memory that start a checkpoint before its block
 * count is reached. Each block makes new versions of the branch records on its keys' paths
 * (a 256-way branch is 8.4 KB), and every version stays in memory until the next checkpoint
 * is durable: under load, ~1 MB a block at 300,000 keys. This bounds that memory, and with
 * it the replay of a restart (which makes the same records again).
 */
export const DEFAULT_CHECKPOINT_BYTES = 64 * 1024 * 1024;

/**
 * Records a block's transaction visits or writes for a checkpoint at most. A checkpoint of
 * more records is spread over the blocks after it, so that no one block carries it whole
 * (it was the longest pause of the commit pipeline): the bound on the extra work a block does.
 */
export const DEFAULT_CHECKPOINT_CHUNK = 4096;

/** A checkpoint being written over several blocks. */
interface CheckpointInProgress {
  blockNum: number;
  root: string;
  /** Records still to visit (depth-first). */
  stack: Buffer[];
  seen: Set<string>;
  /** Keys of the in-memory records the root reaches, parents before children. */
  order: Buffer[];
  /** Next index of `order` to write, from the end (children before parents); -1 while visiting. */
  next: number;
}

interface MemRecord {
  rec: Buffer;
  /** Newest block whose update made this record. */
  block: number;
}

/** Records from memory first (made since the checkpoint), then from LMDB. */
class RecordSource {
  readonly mem = new Map<string, MemRecord>();
  /** Bytes of the records in `mem`. */
  bytes = 0;
  constructor(private readonly db: Database<Buffer, Buffer>) {}
  getBinaryFast(key: Buffer): Buffer | undefined {
    return this.mem.get(key.toString('latin1'))?.rec ?? this.db.getBinaryFast(key);
  }
  getBinary(key: Buffer): Buffer | undefined {
    return this.mem.get(key.toString('latin1'))?.rec ?? this.db.getBinary(key);
  }
}

export interface StateEngineOptions {
  leafEncoding: LeafEncoding;
  /** Blocks between checkpoints (>= 1). */
  checkpointEvery?: number;
  /** Bytes of in-memory records that start a checkpoint sooner (default DEFAULT_CHECKPOINT_BYTES). */
  checkpointBytes?: number;
  /** Records a block visits or writes for a checkpoint at most (default DEFAULT_CHECKPOINT_CHUNK). */
  checkpointChunk?: number;
}

export class StateEngine {
  readonly #s: StateStores;
  readonly #src: RecordSource;
  readonly #every: number;
  readonly #maxBytes: number;
  readonly #chunk: number;
  /** The checkpoint being written, over this and the next blocks, if any. */
  #writing: CheckpointInProgress | null = null;
  /** The state as of the checkpoint, any block after it, or any staged block. */
  readonly tree: MerkleTree;
  /** Bytes in memory when the last checkpoint was complete: they leave once it is durable. */
  #leaving = 0;
  /** The last checkpoint written (durable or not). */
  #checkpoint: Checkpoint = { blockNum: -1, root: EMPTY_ROOT };

  constructor(stores: StateStores, opts: StateEngineOptions) {
    this.#s = stores;
    this.#every = opts.checkpointEvery ?? DEFAULT_CHECKPOINT_BLOCKS;
    if (!Number.isInteger(this.#every) || this.#every < 1) throw new RangeError('checkpointEvery must be a positive integer');
    this.#maxBytes = opts.checkpointBytes ?? DEFAULT_CHECKPOINT_BYTES;
    if (!Number.isInteger(this.#maxBytes) || this.#maxBytes < 1) throw new RangeError('checkpointBytes must be a positive integer');
    this.#chunk = opts.checkpointChunk ?? DEFAULT_CHECKPOINT_CHUNK;
    if (!Number.isInteger(this.#chunk) || this.#chunk < 1) throw new RangeError('checkpointChunk must be a positive integer');
    this.#src = new RecordSource(stores.merkle);
    this.tree = new MerkleTree(this.#src as unknown as Database<Buffer, Buffer>, { leafEncoding: opts.leafEncoding });
  }

  get checkpoint(): Checkpoint {
    return this.#checkpoint;
  }

  /** Records held in memory (made since the last durable checkpoint). */
  get memRecords(): number {
    return this.#src.mem.size;
  }

  /** Bytes of the records held in memory. */
  get memBytes(): number {
    return this.#src.bytes;
  }

  /**
   * Loads the state as of the durable head: its checkpoint, then every delta after it
   * applied again. Throws CorruptStateError when a delta is missing or does not give the
   * root its block recorded.
   */
  recover(head: ChainHead | undefined): void {
    this.#src.mem.clear();
    this.#src.bytes = 0;
    this.#leaving = 0;
    this.#writing = null;
    if (head === undefined) {
      this.#checkpoint = { blockNum: -1, root: EMPTY_ROOT };
      return;
    }
    if (this.#stored(head.stateRoot)) {
      // Written before deltas existed, or the head is a checkpoint: nothing to apply.
      this.#checkpoint = { blockNum: head.blockNum, root: head.stateRoot };
      return;
    }
    const last = this.#s.deltas.get(head.blockNum);
    if (last === undefined) throw new CorruptStateError(`the state delta of head block ${head.blockNum} is missing`);
    const { base, baseRoot } = deltaHead(last);
    if (!this.#stored(baseRoot)) throw new CorruptStateError(`checkpoint root ${baseRoot} of block ${base} is missing`);
    this.#checkpoint = { blockNum: base, root: baseRoot };
    let root = baseRoot;
    for (let b = base + 1; b <= head.blockNum; b++) {
      const raw = this.#s.deltas.get(b);
      if (raw === undefined) throw new CorruptStateError(`the state delta of block ${b} is missing`);
      const d = decodeDelta(raw);
      const u = this.#apply(root, d.changes);
      if (u.root !== d.root) throw new CorruptStateError(`block ${b}'s state delta gives root ${u.root}, not the recorded ${d.root}`);
      this.stage(b, u.writes);
      root = u.root;
    }
    if (root !== head.stateRoot) throw new CorruptStateError(`the state deltas give root ${root}, not the head's ${head.stateRoot}`);
  }

  /** Makes a block's records readable to the blocks built on it (before it is durable). */
  stage(blockNum: number, writes: ReadonlyArray<[Buffer, Buffer]>): void {
    const mem = this.#src.mem;
    for (const [k, rec] of writes) {
      const key = k.toString('latin1');
      const m = mem.get(key);
      if (m === undefined) {
        mem.set(key, { rec, block: blockNum });
        this.#src.bytes += rec.length;
      } else if (m.block < blockNum) m.block = blockNum;
    }
  }

  /**
   * Inside the block's transaction: its delta, its root's index entry, and, when one is
   * due, the checkpoint. Returns the checkpoint's block number, or null.
   */
  writeBlock(parent: ChainHead, head: ChainHead, writes: ReadonlyArray<[Buffer, Buffer]>, changes: Map<string, Uint8Array | null>): number | null {
    const blockNum = head.blockNum;
    this.stage(blockNum, writes);
    const s = this.#s;
    // A parent whose records are all stored (written whole, as a state service's first
    // root is) is the better base: nothing before it needs applying.
    if (parent.blockNum > this.#checkpoint.blockNum && this.#stored(parent.stateRoot)) {
      this.#checkpoint = { blockNum: parent.blockNum, root: parent.stateRoot };
    }
    const cp = this.#checkpoint;
    s.deltas.put(blockNum, encodeDelta({ root: head.stateRoot, base: cp.blockNum, baseRoot: cp.root, changes }));
    s.roots.put(Buffer.from(head.stateRoot, 'hex'), blockNum);
    if (this.#writing === null) {
      if (blockNum - cp.blockNum < this.#every && this.#src.bytes - this.#leaving < this.#maxBytes) return null;
      this.#writing = { blockNum, root: head.stateRoot, stack: [Buffer.from(head.stateRoot, 'hex')], seen: new Set(), order: [], next: -1 };
    }
    return this.#continueCheckpoint();
  }

  /**
   * A block's transaction failed: the checkpoint in progress may have lost writes it
   * counted as done, so it starts again (from a later block's root) instead of going on.
   */
  writeFailed(): void {
    this.#writing = null;
  }

  /** After a block's transaction is durable: a checkpoint's records leave memory. */
  durable(checkpointBlock: number | null): void {
    if (checkpointBlock === null) return;
    const src = this.#src;
    this.#leaving = 0;
    for (const [k, m] of src.mem) {
      if (m.block > checkpointBlock) continue;
      src.mem.delete(k);
      src.bytes -= m.rec.length;
    }
  }

  /**
   * Goes on with the checkpoint in progress, inside a block's transaction, for at most
   * `chunk` records: first finds the in-memory records its root reaches, then writes them
   * children first, so a stored record's whole subtree is always stored (what `#stored`
   * relies on: the root's own record is written last, with the checkpoint's key). Returns
   * the checkpoint's block number once it is complete, else null. Its records stay in
   * memory until then.
   */
  #continueCheckpoint(): number | null {
    const w = this.#writing;
    if (w === null) return null;
    const mem = this.#src.mem;
    let budget = this.#chunk;
    if (w.next < 0) {
      for (let key = w.stack.pop(); key !== undefined; key = w.stack.pop()) {
        const k = key.toString('latin1');
        const m = mem.get(k);
        if (m === undefined || w.seen.has(k)) continue; // stored already
        w.seen.add(k);
        w.order.push(key);
        const r = parseRecord(m.rec);
        if (r.branch) {
          for (let i = 0, o = BRANCH_HEAD + 1; i < r.n; i++, o += ENTRY) w.stack.push(r.rec.subarray(o, o + 32));
        } else if (!r.endLeaf) w.stack.push(r.end);
        if (--budget === 0) break;
      }
      if (w.stack.length > 0) return null;
      w.next = w.order.length - 1;
      w.seen.clear();
    }
    for (; w.next >= 0 && budget > 0; w.next--, budget--) {
      const key = w.order[w.next] as Buffer;
      const m = mem.get(key.toString('latin1'));
      if (m === undefined) {
        // Blocks are pipelined: a checkpoint that completed just before this one started
        // wrote the record and, once durable, dropped it from memory after this one visited
        // it. Stored already is fine; gone from both is not.
        if (this.#s.merkle.getBinaryFast(key) !== undefined) continue;
        throw new CorruptStateError(`record ${key.toString('hex')} of the checkpoint of block ${w.blockNum} left memory before it was written`);
      }
      this.#s.merkle.put(key, m.rec);
    }
    if (w.next >= 0) return null;
    CHECKPOINT.put(this.#s.meta, { blockNum: w.blockNum, root: w.root });
    this.#checkpoint = { blockNum: w.blockNum, root: w.root };
    this.#writing = null;
    this.#leaving = this.#src.bytes;
    return w.blockNum;
  }

  #stored(root: string): boolean {
    return this.#s.merkle.getBinaryFast(Buffer.from(root, 'hex')) !== undefined;
  }

  #apply(root: string, changes: Map<string, Uint8Array | null>): { root: string; writes: Array<[Buffer, Buffer]> } {
    const sets = new Map<string, Uint8Array>();
    const deletes: string[] = [];
    for (const [a, v] of changes) {
      if (v === null) deletes.push(a);
      else sets.set(a, v);
    }
    return this.tree.update(root, sets, deletes);
  }
}

/**
 * Loads the head's state the way a restart does (checkpoint plus deltas, every root
 * checked), writing nothing; for the integrity check. Throws CorruptStateError.
 */
export function checkReplay(stores: StateStores, head: ChainHead, leafEncoding: LeafEncoding): void {
  new StateEngine(stores, { leafEncoding }).recover(head);
}
