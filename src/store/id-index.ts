/**
 * The id index of a ledger: where each committed batch and transaction sits, kept in
 * memory and built from per-block records that are only ever appended.
 *
 * Batch and transaction ids are random (signatures), so an LMDB tree keyed by them costs
 * one random page write (4 KB, then more as the tree deepens) per id and block; those
 * writes were most of the bytes a committed batch wrote. Here a block writes, in its own
 * transaction and under its block number, one id record (its batch and transaction ids,
 * 64 bytes each) and one receipts record (without the transaction ids, which lookups
 * know): appended pages only. Each thread that looks ids
 * up keeps an open-addressing table of 12-byte slots (a 32-bit tag of the id, the block,
 * the id's place in the block) and brings it up to the stored head of its own read
 * snapshot before a lookup, so what it answers agrees with everything else it reads in
 * that turn. A tag match is confirmed against the id record (64 bytes compared), so a
 * shared tag never gives a wrong answer, and an id that is not committed costs no read.
 *
 * The table holds only the ids of the blocks after the last run on disk (src/store/id-runs.ts):
 * once those reach RUN_MIN (65,536 ids), the committer makes them a sorted run (written with a
 * later block, src/store/id-run-writer.ts), and each thread drops them from its table when it
 * sees the run. Older ids are found through each run's Bloom filter and a binary search of one
 * chunk. So a thread holds ~25 bytes per id of about RUN_MIN ids, plus ~1.26 bytes per id in
 * runs, and a start reads the runs' fences and filters and the blocks after them, not every
 * block of the chain.
 */
import type { Database } from 'lmdb';
import { TransactionReceipt, encode } from '../proto/index.js';
import { hexBytesInto } from '../codec/hex.js';
import { unseal } from './checksum.js';
import { CorruptRecordError } from './alarms.js';
import { lookupRun, newestRun, readRuns, viewRun, type IdRunStores, type RunView } from './id-runs.js';

/** Batch position: [block number, index of the batch in the block]. */
export type BatchPos = [number, number];
/** Transaction position: [block number, batch index, transaction index]. */
export type TxnPos = [number, number, number];

const ID_BYTES = 64;
/** Set in a slot's place word for a transaction (clear: a batch). */
const TXN_BIT = 0x80000000;
const SLOT = 3;

/**
 * The id record of a block: `u32 batches | u32 txns | u32 first txn of each batch |
 * batch ids | txn ids` (ids as their 64 bytes).
 */
export function encodeIdRecord(batches: ReadonlyArray<{ id: string; txns: readonly string[] }>): Buffer {
  const nB = batches.length;
  const nT = batches.reduce((n, b) => n + b.txns.length, 0);
  const head = 8 + 4 * nB;
  const out = Buffer.allocUnsafe(head + ID_BYTES * (nB + nT));
  out.writeUInt32LE(nB, 0);
  out.writeUInt32LE(nT, 4);
  let t = 0;
  batches.forEach((b, i) => {
    out.writeUInt32LE(t, 8 + 4 * i);
    writeId(out, head + ID_BYTES * i, b.id);
    for (const id of b.txns) writeId(out, head + ID_BYTES * (nB + t++), id);
  });
  return out;
}

function writeId(out: Buffer, at: number, id: string): void {
  if (!hexBytesInto(id, ID_BYTES, idBytes)) throw new Error(`not an id (128 lowercase hex characters): ${id.slice(0, 20)}`);
  idBytes.copy(out, at);
}

/** The bytes of the id being written or looked up. */
const idBytes = Buffer.allocUnsafe(ID_BYTES);

/** The receipts record of a block: `u32 count | u32 end of each | receipts back to back`. */
export function encodeReceipts(receipts: readonly Uint8Array[]): Buffer {
  const head = 4 + 4 * receipts.length;
  const out = Buffer.allocUnsafe(head + receipts.reduce((n, r) => n + r.length, 0));
  out.writeUInt32LE(receipts.length, 0);
  let at = head;
  receipts.forEach((r, i) => {
    out.set(r, at);
    at += r.length;
    out.writeUInt32LE(at, 4 + 4 * i);
  });
  return out;
}

/** Receipt `k` of a receipts record (a view into it), or undefined. */
export function receiptAt(rec: Buffer, k: number): Buffer | undefined {
  if (rec.length < 4) return undefined;
  const n = rec.readUInt32LE(0);
  if (k < 0 || k >= n || rec.length < 4 + 4 * n) return undefined;
  const start = k === 0 ? 4 + 4 * n : rec.readUInt32LE(4 + 4 * (k - 1));
  const end = rec.readUInt32LE(4 + 4 * k);
  if (end < start || end > rec.length) return undefined;
  return rec.subarray(start, end);
}

/** The stores the index reads: id records and receipts, both by block number, and the runs. */
export interface IdStores extends IdRunStores {
  receipts: Database<Buffer, number>;
}

export class IdIndex {
  #slots = new Uint32Array(SLOT * 1024);
  #mask = 1023;
  #count = 0;
  /** The highest block whose ids are in the table (-1: none). */
  #through = -1;
  /** The first block with an id record (0 for the node's ledger, 1 for a circuit's). */
  #first = -1;
  /** The runs on disk, in block order, as of the newest block indexed. */
  #runs: RunView[] = [];
  /** The last block in a run (-1: none); the table holds the blocks after it. */
  #runsThrough = -1;
  /** The highest run number seen (-1: none; -2: not read yet). */
  #newestRun = -2;
  /** Blocks in runs whose id record this thread checked in full, a bit each. */
  #checkedBlocks = new Uint8Array(1024);
  /** Candidates of a run lookup: block, word, … */
  readonly #found: number[] = [];

  constructor(private readonly s: IdStores) {}

  /** Ids indexed (batches and transactions), in the table and in runs. */
  get size(): number {
    let n = this.#count;
    for (const r of this.#runs) n += r.entries;
    return n;
  }

  /** Ids held in this thread's table (the blocks after the last run). */
  get tableSize(): number {
    return this.#count;
  }

  /** Runs on disk this thread reads. */
  get runs(): number {
    return this.#runs.length;
  }

  /** The highest block indexed (-1: none yet). */
  get through(): number {
    return this.#through;
  }

  /**
   * Syncs, then checks that the id records run without a gap up to the head block: a record
   * missing below the head (its key damaged on disk) would make committed batches UNKNOWN.
   * Run at start; throws CorruptRecordError.
   */
  syncComplete(head: number | undefined, store: string): void {
    this.sync();
    // A circuit ledger's initial head (block 0) has no block and so no record.
    if (head === undefined || (this.#through < 0 && head <= 0)) return;
    const gap = this.#first > 1 ? 0 : this.#through < head ? this.#through + 1 : -1;
    if (gap >= 0) throw new CorruptRecordError('ledger.mdb', `${store} key ${gap}`, `missing below the head block ${head}`);
  }

  /** Takes in the blocks stored after the last one indexed (as this thread's snapshot sees them). */
  sync(): void {
    if (this.#newestRun === -2) {
      this.#loadRuns();
      if (this.#runs.length > 0) {
        this.#first = (this.#runs[0] as RunView).first;
        this.#through = this.#runsThrough;
      }
    }
    if (this.#through < 0) {
      // The first block may have any number (a circuit ledger's first block is 1); then they follow one by one.
      for (const { key, value } of this.s.blockIds.getRange({ limit: 1 })) {
        this.#add(key, value);
        this.#through = key;
        this.#first = key;
      }
      if (this.#through < 0) return;
    }
    let added = false;
    for (;;) {
      const next = this.#through + 1;
      const rec = fastRecord(this.s.blockIds, next, 'block_ids');
      if (rec === undefined) break;
      this.#add(next, rec);
      this.#through = next;
      added = true;
    }
    // Runs change only in a block's transaction: a snapshot with a new run has a new block.
    if (added && newestRun(this.s) !== this.#newestRun) this.#loadRuns();
  }

  /** Reads the runs (keeping what this thread read of those it had), and drops from the table what they now hold. */
  #loadRuns(): void {
    const had = new Map(this.#runs.map((r) => [r.id, r]));
    this.#runs = readRuns(this.s).map((m) => had.get(m.id) ?? viewRun(this.s, m));
    this.#newestRun = newestRun(this.s);
    const through = this.#runs.length ? (this.#runs[this.#runs.length - 1] as RunView).last : -1;
    if (through <= this.#runsThrough) return;
    this.#runsThrough = through;
    if (this.#through < 0) return;
    // The table again, with only the blocks after the runs (few: the runs come every RUN_MIN ids).
    this.#slots = new Uint32Array(SLOT * 1024);
    this.#mask = 1023;
    this.#count = 0;
    for (let b = through + 1; b <= this.#through; b++) {
      const rec = fastRecord(this.s.blockIds, b, 'block_ids');
      if (rec !== undefined) this.#add(b, rec);
    }
  }

  batch(id: string): BatchPos | undefined {
    const hit = this.#find(id, false);
    return hit && [hit.block, hit.place];
  }

  txn(id: string): TxnPos | undefined {
    const hit = this.#find(id, true);
    if (!hit) return undefined;
    const [bi, ti] = batchOfTxn(hit.rec, hit.place);
    return [hit.block, bi, ti];
  }

  hasBatch(id: string): boolean {
    return this.#find(id, false) !== undefined;
  }

  hasTxn(id: string): boolean {
    return this.#find(id, true) !== undefined;
  }

  /**
   * The serialized TransactionReceipt of a committed transaction. Receipts are stored
   * without their transaction id (128 bytes of each); it is appended here (a field
   * appended to a protobuf message is part of it; the last copy of a field wins).
   */
  receipt(txnId: string): Buffer | undefined {
    const hit = this.#find(txnId, true);
    if (!hit) return undefined;
    const rec = fastRecord(this.s.receipts, hit.block, 'receipts');
    const r = rec && receiptAt(rec, hit.place);
    return r && Buffer.concat([r, encode(TransactionReceipt, { transactionId: txnId })]);
  }

  /** The block, place and id record (valid until the next LMDB read of this thread) of an id. */
  #find(id: string, txn: boolean): { block: number; place: number; rec: Buffer } | undefined {
    if (typeof id !== 'string' || !hexBytesInto(id, ID_BYTES, idBytes)) return undefined;
    this.sync();
    const tag = idBytes.readUInt32BE(0);
    const slots = this.#slots;
    const mask = this.#mask;
    for (let i = tag & mask; ; i = (i + 1) & mask) {
      const o = i * SLOT;
      const blockPlus = slots[o + 1] as number;
      if (blockPlus === 0) break;
      if (slots[o] !== tag) continue;
      const word = slots[o + 2] as number;
      if (((word & TXN_BIT) !== 0) !== txn) continue;
      const block = blockPlus - 1;
      const place = word & ~TXN_BIT;
      // Checked in full when it was indexed (sync); here the 64 id bytes the answer rests on
      // are compared with the id asked for, so no CRC over the whole record per lookup.
      const rec = indexedRecord(this.s.blockIds, block);
      if (!rec) continue;
      const at = idOffset(rec, place, txn);
      if (at >= 0 && rec.compare(idBytes, 0, ID_BYTES, at, at + ID_BYTES) === 0) return { block, place, rec };
    }
    return this.#findInRuns(tag, txn);
  }

  /**
   * A block's id record for an answer from the runs: checked in full (its checksum) the first
   * time, then, as an indexed record, by the 64 id bytes compared (a record is ~91 KB with 714
   * batches in its block: a checksum per lookup halved the statuses served). One bit per block.
   */
  #checked(block: number): Buffer | undefined {
    const byte = block >>> 3;
    const bit = 1 << (block & 7);
    if (byte < this.#checkedBlocks.length && ((this.#checkedBlocks[byte] as number) & bit) !== 0) return indexedRecord(this.s.blockIds, block);
    const rec = fastRecord(this.s.blockIds, block, 'block_ids');
    if (rec === undefined) return undefined;
    if (byte >= this.#checkedBlocks.length) {
      const grown = new Uint8Array(Math.max(byte + 1, 2 * this.#checkedBlocks.length));
      grown.set(this.#checkedBlocks);
      this.#checkedBlocks = grown;
    }
    this.#checkedBlocks[byte] = (this.#checkedBlocks[byte] as number) | bit;
    return rec;
  }

  /** The id (in idBytes, with its tag) in the runs: each candidate confirmed against its block's id record. */
  #findInRuns(tag: number, txn: boolean): { block: number; place: number; rec: Buffer } | undefined {
    const out = this.#found;
    for (const run of this.#runs) {
      out.length = 0;
      lookupRun(this.s, run, tag, out);
      for (let k = 0; k < out.length; k += 2) {
        const word = out[k + 1] as number;
        if (((word & TXN_BIT) !== 0) !== txn) continue;
        const block = out[k] as number;
        const place = word & ~TXN_BIT;
        // Not indexed by this thread: checked in full (its checksum) the first time it answers.
        const rec = this.#checked(block);
        if (!rec) continue;
        const at = idOffset(rec, place, txn);
        if (at >= 0 && rec.compare(idBytes, 0, ID_BYTES, at, at + ID_BYTES) === 0) return { block, place, rec };
      }
    }
    return undefined;
  }

  #add(block: number, rec: Buffer): void {
    const nB = rec.readUInt32LE(0);
    const nT = rec.readUInt32LE(4);
    const ids = 8 + 4 * nB;
    if (rec.length !== ids + ID_BYTES * (nB + nT)) throw new Error(`the id record of block ${block} is damaged (${rec.length} bytes)`);
    this.#reserve(nB + nT);
    for (let i = 0; i < nB; i++) this.#put(rec.readUInt32BE(ids + ID_BYTES * i), block, i);
    for (let k = 0; k < nT; k++) this.#put(rec.readUInt32BE(ids + ID_BYTES * (nB + k)), block, (k | TXN_BIT) >>> 0);
  }

  #reserve(more: number): void {
    if ((this.#count + more) * 10 <= (this.#mask + 1) * 7) return;
    let cap = this.#mask + 1;
    while ((this.#count + more) * 10 > cap * 7) cap *= 2;
    const old = this.#slots;
    this.#slots = new Uint32Array(SLOT * cap);
    this.#mask = cap - 1;
    this.#count = 0;
    for (let o = 0; o < old.length; o += SLOT) {
      if (old[o + 1] !== 0) this.#put(old[o] as number, (old[o + 1] as number) - 1, old[o + 2] as number);
    }
  }

  #put(tag: number, block: number, word: number): void {
    const slots = this.#slots;
    const mask = this.#mask;
    let i = tag & mask;
    while (slots[i * SLOT + 1] !== 0) i = (i + 1) & mask;
    const o = i * SLOT;
    slots[o] = tag;
    slots[o + 1] = block + 1;
    slots[o + 2] = word;
    this.#count++;
  }
}

/** Where id `place` (a batch index, or a transaction's number in the block) starts in an id record; -1 if outside. */
function idOffset(rec: Buffer, place: number, txn: boolean): number {
  const nB = rec.readUInt32LE(0);
  const nT = rec.readUInt32LE(4);
  if (place >= (txn ? nT : nB)) return -1;
  return 8 + 4 * nB + ID_BYTES * (txn ? nB + place : place);
}

/** [batch index, transaction index] of the block's transaction number `k`. */
function batchOfTxn(rec: Buffer, k: number): [number, number] {
  const nB = rec.readUInt32LE(0);
  let lo = 0;
  let hi = nB - 1;
  // The last batch whose first transaction is at or before k.
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (rec.readUInt32LE(8 + 4 * mid) <= k) lo = mid;
    else hi = mid - 1;
  }
  return [lo, k - rec.readUInt32LE(8 + 4 * lo)];
}

/**
 * A record's checked bytes without a copy: a view into lmdb-js's shared read buffer, valid
 * until the next read of this thread (as getBinaryFast's).
 */
function fastRecord(db: Database<Buffer, number>, key: number, store: string): Buffer | undefined {
  const raw = db.getBinaryFast(key);
  return raw === undefined ? undefined : unseal(raw, `${store} key ${key}`);
}

/**
 * An id record's bytes without its checksum trailer, unchecked: only for a record this
 * thread checked in full when it indexed it (its bytes never change once written).
 */
function indexedRecord(db: Database<Buffer, number>, key: number): Buffer | undefined {
  const raw = db.getBinaryFast(key);
  return raw === undefined || raw.length < 4 ? undefined : raw.subarray(0, raw.length - 4);
}
