/**
 * A walk of every page an LMDB file's newest snapshot reaches, read with plain file I/O
 * before LMDB maps the file.
 *
 * LMDB trusts its pages. A bit flip in a page header or a node (a node offset, a key or data
 * size, a child page number, a page's transaction id, a free-list entry) is not seen when
 * the page is read: it sends the library out of bounds, or makes a write transaction take a
 * page it must copy for one it may change in place (a write into the read-only map), or
 * hand out a page that is still in use. Each of those ends in a signal or in silent damage,
 * often only on the first write after a start. The record checksums (checksum.ts) cannot see
 * them, and reading every record (scan.ts) does not reach the free list or the write path.
 * Here every reachable page is checked the way LMDB will use it, so that such a file is
 * refused at start with a message that names the page.
 *
 * Layout (LMDB data format version 2, as lmdb-js builds it; 64-bit page numbers,
 * little-endian), from the library's own definitions:
 *   page header (24 bytes): pgno u64 @0, txnid u64 @8, flags u16 @18, lower u16 @20,
 *     upper u16 @22 (an overflow page holds its page count u32 @20 instead); lower and
 *     upper count from the end of the header; node offsets (u16 each) follow the header
 *   node (8 bytes + key + data): lo u16 @0, hi u16 @2, flags u16 @4, key size u16 @6; a
 *     branch node's child is lo | hi << 16 | flags << 32, a leaf node's data size lo | hi << 16
 *   database record (48 bytes): flags u16 @4, depth u16 @6, branch, leaf and overflow page
 *     counts u64 @8, @16, @24, entries u64 @32, root page u64 @40 (all ones when empty);
 *     the meta page holds the free-list database's record @48 and the main one's @96
 *   free list: key a transaction id, value a page-number list (count u64, then the entries)
 */
import { fstatSync, readSync } from 'node:fs';

const HEADER = 24;
const NODE = 8;
const DB_RECORD = 48;
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
const P_OVERFLOW = 0x04;
const F_BIGDATA = 0x01;
const F_SUBDATA = 0x02;

export interface Snapshot {
  pageSize: number;
  lastPage: bigint;
  txnId: bigint;
  /** The meta page's two database records (free list, then main), 96 bytes. */
  dbs: Buffer;
}

class Damage extends Error {
  constructor(
    message: string,
    /** A page the snapshot reaches lies past the end of the file: it was cut short. */
    readonly pastEnd = false,
  ) {
    super(message);
  }
}

/** What each page of the file is to the snapshot (the index is the page number). */
export const PAGE = { unreached: 0, branch: 1, leaf: 2, overflow: 3, free: 4 } as const;

/**
 * Walks every page the snapshot reaches: `problem` is null when all are sound, else the first
 * damage found (`pastEnd`: a reached page the file does not hold); `kinds` says what each page
 * was found to be (PAGE), up to the damage.
 */
export function walkSnapshot(fd: number, s: Snapshot): { problem: string | null; pastEnd: boolean; kinds: Uint8Array } {
  const walk = new Walk(fd, s);
  try {
    walk.run();
    return { problem: null, pastEnd: false, kinds: walk.kinds };
  } catch (err) {
    if (err instanceof Damage) return { problem: err.message, pastEnd: err.pastEnd, kinds: walk.kinds };
    throw err;
  }
}

/** Pages of one level read with one call at most (256 KiB of 4 KiB pages). */
const EXTENT_PAGES = 64;
/** Pages between two of one level that are read through rather than sought past. */
const GAP_PAGES = 8;

/** A little-endian u64 at `off` as a number (page numbers and counts stay far below 2^53). */
function u64(b: Buffer, off: number): number {
  return b.readUInt32LE(off) + b.readUInt32LE(off + 4) * 4_294_967_296;
}

class Walk {
  readonly #fd: number;
  readonly #s: Snapshot;
  readonly #pageSize: number;
  readonly #lastPage: number;
  readonly #txnId: number;
  /** Pages reached so far (PAGE): each belongs to one tree, once, or to the free list. */
  readonly kinds: Uint8Array;
  /** Pages the file holds (it may end before the snapshot's last page: see files.ts). */
  readonly #filePages: number;
  /** The tree page being walked, and an overflow run's first page: read into, not allocated, per page. */
  readonly #page: Buffer;
  readonly #overflowPage: Buffer;
  /** Runs of nearby pages of one level, read at once. */
  readonly #extent: Buffer;

  constructor(fd: number, s: Snapshot) {
    this.#fd = fd;
    this.#s = s;
    this.#pageSize = s.pageSize;
    this.#lastPage = Number(s.lastPage);
    this.#txnId = Number(s.txnId);
    this.kinds = new Uint8Array(this.#lastPage + 1);
    this.#filePages = Math.floor(fstatSync(fd).size / s.pageSize);
    this.#page = Buffer.allocUnsafe(s.pageSize);
    this.#overflowPage = Buffer.allocUnsafe(s.pageSize);
    this.#extent = Buffer.allocUnsafe(EXTENT_PAGES * s.pageSize);
  }

  run(): void {
    const freeList: Array<{ at: string; data: Buffer }> = [];
    this.#tree('the free list', this.#s.dbs.subarray(0, DB_RECORD), (at, data) => freeList.push({ at, data }));
    const subs: Array<{ name: string; record: Buffer }> = [];
    this.#tree('the main database', this.#s.dbs.subarray(DB_RECORD, 2 * DB_RECORD), (at, data, key, flags) => {
      if (flags & F_SUBDATA) {
        if (data.length !== DB_RECORD) throw new Damage(`${at}: a sub-database record of ${data.length} bytes`);
        subs.push({ name: key.toString('utf8').replace(/\0$/, ''), record: Buffer.from(data) });
      }
    });
    for (const { name, record } of subs) this.#tree(`sub-database ${JSON.stringify(name)}`, record);
    for (const { at, data } of freeList) this.#freePages(at, data);
  }

  /**
   * Walks one B-tree; `leaf`, when given, gets each leaf's key and value (copied out of the
   * page). Without it no value is read: a sub-database's overflow runs are checked by their
   * headers, not read through.
   */
  #tree(name: string, record: Buffer, leaf?: (at: string, data: Buffer, key: Buffer, flags: number) => void): void {
    const depth = record.readUInt16LE(6);
    const want = { branch: u64(record, 8), leaf: u64(record, 16), overflow: u64(record, 24), entries: u64(record, 32) };
    const root = u64(record, 40);
    const seen = { branch: 0, leaf: 0, overflow: 0, entries: 0 };
    // An empty tree's root is all ones.
    if (record.readUInt32LE(40) === 0xffffffff && record.readUInt32LE(44) === 0xffffffff) {
      if (depth !== 0 || want.entries !== 0) throw new Damage(`${name}: empty, but its record counts ${want.entries} entries in depth ${depth}`);
      return;
    }
    const pageSize = this.#pageSize;
    // Level by level, each level's pages in file order: runs of nearby pages are read with one
    // call, and a cold file is read mostly forward (the kernel reads ahead), not page by page.
    let pages = [root];
    for (let level = 1; pages.length > 0; level++) {
      const next: number[] = [];
      this.#readPages(pages, name, (pgno, p) => {
        const flags = p.readUInt16LE(18) & 0x7f;
        const lower = p.readUInt16LE(20);
        const upper = p.readUInt16LE(22);
        const isLeaf = flags === P_LEAF;
        const at = (): string => `${name}, page ${pgno}`;
        if (flags !== P_BRANCH && !isLeaf) throw new Damage(`${at()}: page flags 0x${flags.toString(16)}, neither a branch nor a leaf`);
        if (isLeaf !== (level === depth)) throw new Damage(`${at()}: a ${isLeaf ? 'leaf' : 'branch'} at level ${level} of a tree ${depth} deep`);
        if (lower % 2 || lower > upper || HEADER + upper > pageSize)
          throw new Damage(`${at()}: free-space bounds ${lower}..${upper} out of the page`);
        const count = lower / 2;
        if (isLeaf) {
          this.kinds[pgno] = PAGE.leaf;
          seen.leaf++;
          seen.entries += count;
        } else seen.branch++;
        for (let i = 0; i < count; i++) {
          const off = HEADER + p.readUInt16LE(HEADER + 2 * i);
          const node = (): string => `${at()}, node ${i}`;
          if (off < HEADER + upper || off + NODE > pageSize) throw new Damage(`${node()}: offset ${off} out of the node area`);
          const lo = p.readUInt16LE(off);
          const hi = p.readUInt16LE(off + 2);
          const nodeFlags = p.readUInt16LE(off + 4);
          const keySize = p.readUInt16LE(off + 6);
          const keyEnd = off + NODE + keySize;
          if (keyEnd > pageSize) throw new Damage(`${node()}: a ${keySize}-byte key runs past the page end`);
          if (!isLeaf) {
            next.push(lo + hi * 65_536 + nodeFlags * 4_294_967_296);
            continue;
          }
          const size = lo | (hi << 16);
          if (nodeFlags & ~(F_BIGDATA | F_SUBDATA)) throw new Damage(`${node()}: node flags 0x${nodeFlags.toString(16)}`);
          const key = (): Buffer => Buffer.from(p.subarray(off + NODE, keyEnd));
          if (nodeFlags & F_BIGDATA) {
            if (keyEnd + 8 > pageSize) throw new Damage(`${node()}: its overflow page number runs past the page end`);
            const first = u64(p, keyEnd);
            seen.overflow += this.#overflow(first, size, node);
            leaf?.(node(), this.#readData(first, size), key(), nodeFlags);
          } else {
            if (keyEnd + size > pageSize) throw new Damage(`${node()}: ${size} bytes of data run past the page end`);
            leaf?.(node(), Buffer.from(p.subarray(keyEnd, keyEnd + size)), key(), nodeFlags);
          }
        }
      });
      pages = next;
    }
    for (const k of ['branch', 'leaf', 'overflow', 'entries'] as const) {
      if (seen[k] !== want[k])
        throw new Damage(`${name}: its record counts ${want[k]} ${k === 'entries' ? 'entries' : `${k} pages`}, the tree has ${seen[k]}`);
    }
  }

  /**
   * Claims and reads `pages` (one level of a tree) in file order, calling `visit` with each
   * page (a view, valid during the call). Pages close together are read with one call: up to
   * EXTENT_PAGES, across gaps of up to GAP_PAGES pages that are read and not looked at.
   */
  #readPages(pages: number[], name: string, visit: (pgno: number, page: Buffer) => void): void {
    const sorted = Float64Array.from(pages).sort();
    const size = this.#pageSize;
    for (let i = 0; i < sorted.length; ) {
      const first = sorted[i] as number;
      let j = i + 1;
      while (j < sorted.length && (sorted[j] as number) - (sorted[j - 1] as number) <= GAP_PAGES + 1 && (sorted[j] as number) - first < EXTENT_PAGES)
        j++;
      const span = (sorted[j - 1] as number) - first + 1;
      for (let k = i; k < j; k++) {
        const pgno = sorted[k] as number;
        this.#claim(pgno, () => `${name}, page ${pgno}`, PAGE.branch);
      }
      const n = span === 1 ? 0 : readSync(this.#fd, this.#extent, 0, span * size, first * size);
      for (let k = i; k < j; k++) {
        const pgno = sorted[k] as number;
        let p: Buffer;
        if (span === 1) p = this.#read(pgno, () => `${name}, page ${pgno}`, this.#page);
        else {
          const at = (pgno - first) * size;
          if (n < at + size) throw new Damage(`${name}, page ${pgno}: past the end of the file`, true);
          p = this.#extent.subarray(at, at + size);
          this.#checkHeader(pgno, p, () => `${name}, page ${pgno}`);
        }
        visit(pgno, p);
      }
      i = j;
    }
  }

  /** Checks and claims an overflow run; returns its page count. */
  #overflow(first: number, size: number, node: () => string): number {
    const at = (): string => `${node()}'s overflow page ${first}`;
    this.#claim(first, at, PAGE.overflow);
    const p = this.#read(first, at, this.#overflowPage);
    if ((p.readUInt16LE(18) & 0x7f) !== P_OVERFLOW) throw new Damage(`${at()}: not an overflow page`);
    const pages = p.readUInt32LE(20);
    if (pages < 1 || first + pages - 1 > this.#lastPage) throw new Damage(`${at()}: a run of ${pages} pages past the last page`);
    if (size > pages * this.#pageSize - HEADER) throw new Damage(`${at()}: ${size} bytes do not fit its ${pages} pages`);
    if (first + pages > this.#filePages) throw new Damage(`${at()}: its run of ${pages} pages ends past the end of the file`, true);
    for (let i = 1; i < pages; i++) this.#claim(first + i, at, PAGE.overflow);
    return pages;
  }

  #readData(first: number, size: number): Buffer {
    const b = Buffer.alloc(size);
    readSync(this.#fd, b, 0, size, first * this.#pageSize + HEADER);
    return b;
  }

  /**
   * A free-list record: every page it lists lies in the file and in no tree. lmdb-js's page
   * lists keep empty slots (0) for growth and store a run of pages as its negated length
   * followed by its first page.
   */
  #freePages(at: string, data: Buffer): void {
    if (data.length < 8) throw new Damage(`${at}: a free-list record of ${data.length} bytes`);
    const count = data.readBigUInt64LE(0);
    if ((count + 1n) * 8n > BigInt(data.length)) throw new Damage(`${at}: a free-list record of ${count} pages in ${data.length} bytes`);
    const n = Number(count);
    for (let i = 1; i <= n; i++) {
      const entry = data.readBigInt64LE(8 * i);
      if (entry === 0n) continue;
      if (entry > 0n) {
        this.#claim(Number(entry), () => `${at}, free page`, PAGE.free);
        continue;
      }
      if (i === n) throw new Damage(`${at}: a run of free pages without its first page`);
      const first = u64(data, 8 * ++i);
      if (-entry > BigInt(this.#lastPage)) throw new Damage(`${at}: a run of ${-entry} free pages`);
      const run = Number(-entry);
      const where = (): string => `${at}, free run from page ${first}`;
      for (let k = 0; k < run; k++) this.#claim(first + k, where, PAGE.free);
    }
  }

  /** `at` makes the message's place, only when there is one to make. */
  #claim(pgno: number, at: () => string, kind: number): void {
    if (pgno < 2 || pgno > this.#lastPage) throw new Damage(`${at()}: page ${pgno} is not a data page of the file (last page ${this.#lastPage})`);
    if (this.kinds[pgno]) throw new Damage(`${at()}: page ${pgno} is reached twice`);
    this.kinds[pgno] = kind;
  }

  /** Reads page `pgno` into `into` and checks its header. */
  #read(pgno: number, at: () => string, into: Buffer): Buffer {
    const n = readSync(this.#fd, into, 0, into.length, pgno * this.#pageSize);
    if (n < into.length) throw new Damage(`${at()}: past the end of the file`, true);
    this.#checkHeader(pgno, into, at);
    return into;
  }

  /** A page's header must name it and a committed transaction. */
  #checkHeader(pgno: number, p: Buffer, at: () => string): void {
    if (u64(p, 0) !== pgno) throw new Damage(`${at()}: its header names page ${p.readBigUInt64LE(0)}`);
    if (u64(p, 8) > this.#txnId) throw new Damage(`${at()}: written by transaction ${p.readBigUInt64LE(8)}, after the last one (${this.#s.txnId})`);
  }
}
