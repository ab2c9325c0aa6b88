/**
 * Sanity checks of an LMDB data file made BEFORE LMDB maps it. LMDB trusts its file: a
 * truncated file is mapped anyway and the first read past the end kills the process with
 * SIGBUS, and a zeroed header fails with a bare "not an LMDB file". Here the two meta
 * pages are read with plain file I/O and the file is refused with a message that names it.
 *
 * Meta page layout (LMDB data format version 2, as lmdb-js writes it; little-endian):
 *   page header: pgno u64 @0, txnid u64 @8, flags u16 @18 (P_META = 0x08)
 *   meta:        magic u32 @24 (0xBEEFC0DE), version u32 @28, page size u32 @48 (in the
 *                free-list database record), last used page u64 @144, transaction id u64 @152
 * Meta page 0 is at offset 0, meta page 1 at offset `page size`.
 */
import { closeSync, fstatSync, openSync, readSync, truncateSync } from 'node:fs';
import { log } from '../log.js';
import { walkSnapshot, type Snapshot } from './pages.js';

const MAGIC = 0xbeefc0de;
const P_META = 0x08;
const META_BYTES = 160;

/** Why a meta page is unusable, or its content. */
function readMeta(b: Buffer, index: number): Snapshot | string {
  if (b.length < META_BYTES) return `meta page ${index} is cut short`;
  if (b.readUInt32LE(24) !== MAGIC) return `meta page ${index} has no LMDB magic number (zeroed or overwritten)`;
  if (b.readBigUInt64LE(0) !== BigInt(index) || (b.readUInt16LE(18) & P_META) === 0) return `meta page ${index} has a bad page header`;
  const version = b.readUInt32LE(28);
  if (version !== 2) return `meta page ${index} has unsupported data format version ${version}`;
  const pageSize = b.readUInt32LE(48);
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return `meta page ${index} has a bad page size ${pageSize}`;
  return { pageSize, lastPage: b.readBigUInt64LE(144), txnId: b.readBigUInt64LE(152), dbs: Buffer.from(b.subarray(48, 144)) };
}

/**
 * The snapshot LMDB opens a file of `size` bytes at (the meta page with the newer
 * transaction), or what is wrong with its meta pages.
 */
function newestMeta(fd: number, size: number): Snapshot | string {
  const read = (pos: number): Buffer => {
    const b = Buffer.alloc(META_BYTES);
    const n = readSync(fd, b, 0, META_BYTES, pos);
    return b.subarray(0, n);
  };
  const m0 = readMeta(read(0), 0);
  // Page 1 sits one page further; take the page size from page 0 when it is readable.
  const pageSize = typeof m0 === 'string' ? 4096 : m0.pageSize;
  if (size < 2 * pageSize) return `is ${size} bytes, less than its two meta pages: it was truncated`;
  const m1 = readMeta(read(pageSize), 1);
  if (typeof m0 === 'string') return m0;
  if (typeof m1 === 'string') return m1;
  if (m0.pageSize !== m1.pageSize) return 'its two meta pages disagree on the page size';
  // LMDB opens the meta page with the newer transaction: every page it uses must be there.
  return m0.txnId >= m1.txnId ? m0 : m1;
}

/** The snapshot LMDB would open `file` at (for tools and tests); throws when its meta pages are unusable. */
export function newestSnapshot(file: string): Snapshot {
  const fd = openSync(file, 'r');
  try {
    const meta = newestMeta(fd, fstatSync(fd).size);
    if (typeof meta === 'string') throw new Error(`${file} ${meta}`);
    return meta;
  } finally {
    closeSync(fd);
  }
}

/**
 * Returns null when `file` looks sound (or does not exist: LMDB creates it), else what is
 * wrong with it.
 */
export function lmdbFileProblem(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return `cannot be read: ${(err as Error).message}`;
  }
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return 'is empty (0 bytes): it was truncated';
    const meta = newestMeta(fd, size);
    if (typeof meta === 'string') return meta;
    const need = (meta.lastPage + 1n) * BigInt(meta.pageSize);
    // The file may end before the last page its meta page records: LMDB counts pages it
    // allocated and freed again within a transaction without writing them (seen after a clean
    // stop: 17 pages, every one on the free list), and a commit that failed (a full disk, an
    // I/O error) can leave pages it never wrote. Harmless while the snapshot reaches none of
    // them: the walk below reads every page it reaches, and one past the end is a truncation.
    // The file is then padded with zero pages, so that LMDB never maps a page the file lacks
    // (a read there would be a SIGBUS).
    const short = need - BigInt(size);
    const { problem, pastEnd } = walkSnapshot(fd, meta);
    if (problem !== null) {
      if (pastEnd) return `is ${size} bytes but its last transaction uses ${need} bytes: it was truncated (${problem})`;
      return `has a damaged page structure: ${problem}`;
    }
    if (short > 0n) padTo(file, size, Number(need));
    return null;
  } finally {
    closeSync(fd);
  }
}

/** Extends `file` from `from` to `to` bytes with zeros (ftruncate), logged. */
function padTo(file: string, from: number, to: number): void {
  truncateSync(file, to);
  log.warn(`${file} was ${to - from} bytes short of its last transaction, in pages it does not use: padded with zero pages`);
}
