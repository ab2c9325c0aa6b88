/**
 * The id index's runs on disk: where the ids of older blocks are found without holding them
 * in memory (src/store/id-index.ts keeps only the newest blocks' ids in its table).
 *
 * A run covers a range of consecutive blocks. It is the (tag, block, place) entries of their
 * batch and transaction ids (12 bytes each, the same as a slot of the table), sorted by tag and
 * stored in chunks of CHUNK_ENTRIES, each a sealed record read in place (getBinaryFast). Beside
 * them, per run, a descriptor (its blocks and sizes), the first tag of each chunk (its fences)
 * and a Bloom filter of its tags, which every reader holds in memory: ~1.26 bytes an id. A
 * lookup tests each run's filter; in a run that may hold the id, it is a binary search of the
 * fences, then of one chunk (one LMDB read).
 *
 * The committer keeps them as a log-structured merge: once the blocks after the last run hold
 * RUN_MIN ids, they become a run; once the FAN_IN newest runs are of one size tier, they are
 * merged into one. Runs of 16 * RUN_MIN ids or more are not merged again (the largest merge
 * makes 16 * RUN_MIN entries, 12 MiB). A run is made off the block's transaction, in slices
 * between the committer's other work, and written in the transaction of the next block
 * (IdRunWriter, src/store/id-run-writer.ts). Every write is in a block's own transaction, and the writer keeps nothing it
 * did not read in that transaction or an earlier one it saw land: a failed transaction leaves
 * nothing behind, and a restart continues.
 *
 * Runs only ever point at id records: an entry's answer is confirmed against the 64 id bytes
 * of the block's id record, as the table's is, so a stale or damaged entry never answers
 * wrongly; a chunk whose checksum does not match throws CorruptRecordError the first time a
 * thread reads it (then it is trusted: its bytes never change once written).
 */
import type { Database } from 'lmdb';
import { CorruptRecordError } from './alarms.js';
import { unseal } from './checksum.js';

/**
 * Entries per chunk: 1.5 KiB, small enough to sit in a leaf page (no overflow page to follow),
 * so a lookup reads and searches little; the fences cost 4 bytes per 128 ids.
 */
export const CHUNK_ENTRIES = 128;
/**
 * Ids after the last run that make a new run (the bound of each thread's table).
 * CAIRN_TEST_ID_RUN_MIN sets a smaller one, so that tests see runs and merges in a short chain.
 */
export const RUN_MIN = Number(process.env.CAIRN_TEST_ID_RUN_MIN) > 0 ? Number(process.env.CAIRN_TEST_ID_RUN_MIN) : 65_536;
/** Runs merged at once, when they are of one size tier. */
export const FAN_IN = 4;
/** Runs of RUN_MIN * RUN_MAX_FACTOR ids or more are not merged again (the bound of one merge's work). */
export const RUN_MAX_FACTOR = FAN_IN * FAN_IN;

export const ENTRY_BYTES = 12;
/** Key of a run's fences in the chunk store (a chunk number no run reaches). */
export const FENCES = 0xffffffff;
/** Key of a run's filter in the chunk store. */
export const FILTER = 0xfffffffe;
/**
 * Each run's Bloom filter of its tags: 10 bits an id, 7 probes, ~1% false positives. A lookup of
 * an id no run holds (every new batch is checked) then costs a few bit tests per run, not a read
 * of each; a thread holds ~1.25 bytes an id for them, where the table held ~25.
 */
const FILTER_BITS_PER_ID = 10;
const FILTER_PROBES = 7;

/** The stores of the runs, beside the id records they point into. */
export interface IdRunStores {
  blockIds: Database<Buffer, number>;
  /** Run descriptors by run number: `u32 first block | u32 last block | u32 entries | u32 chunks`. */
  idRuns: Database<Buffer, number>;
  /** Chunks (and fences) by `u32 run | u32 chunk`, big-endian. */
  idChunks: Database<Buffer, Buffer>;
}

export interface RunMeta {
  id: number;
  first: number;
  last: number;
  entries: number;
  chunks: number;
}

/** A run as a reader holds it: its fences and filter, and which chunks it has checked. */
export interface RunView extends RunMeta {
  fences: Uint32Array;
  filter: Uint8Array;
  checked: Uint8Array;
}

/** Bytes of the filter of a run of `entries` ids. */
export function filterBytes(entries: number): number {
  return Math.max(8, Math.ceil((entries * FILTER_BITS_PER_ID) / 8));
}

/** Calls `bit` with each of a tag's probe positions in a filter of `bits` bits (double hashing). */
export function probes(tag: number, bits: number, bit: (at: number) => boolean): boolean {
  const h2 = (Math.imul(tag ^ (tag >>> 16), 0x45d9f3b) ^ (tag >>> 13)) | 1;
  let h = tag >>> 0;
  for (let i = 0; i < FILTER_PROBES; i++) {
    if (!bit(h % bits)) return false;
    h = (h + h2) >>> 0;
  }
  return true;
}

/** Whether a run may hold `tag` (false: it surely does not). */
export function mayHold(run: RunView, tag: number): boolean {
  const f = run.filter;
  return probes(tag, f.length * 8, (at) => ((f[at >>> 3] as number) & (1 << (at & 7))) !== 0);
}

export function chunkKey(run: number, chunk: number): Buffer {
  const k = Buffer.allocUnsafe(8);
  k.writeUInt32BE(run, 0);
  k.writeUInt32BE(chunk, 4);
  return k;
}

export function encodeMeta(m: RunMeta): Buffer {
  const b = Buffer.allocUnsafe(16);
  b.writeUInt32LE(m.first, 0);
  b.writeUInt32LE(m.last, 4);
  b.writeUInt32LE(m.entries, 8);
  b.writeUInt32LE(m.chunks, 12);
  return b;
}

function decodeMeta(id: number, raw: Uint8Array): RunMeta {
  const b = unseal(raw, `id_runs key ${id}`);
  if (b.length !== 16) throw new CorruptRecordError('ledger.mdb', `id_runs key ${id}`, `${b.length} bytes`);
  const m = { id, first: b.readUInt32LE(0), last: b.readUInt32LE(4), entries: b.readUInt32LE(8), chunks: b.readUInt32LE(12) };
  if (m.last < m.first || m.chunks !== Math.ceil(m.entries / CHUNK_ENTRIES)) {
    throw new CorruptRecordError('ledger.mdb', `id_runs key ${id}`, 'its sizes do not agree');
  }
  return m;
}

/** The runs stored, in block order (as the current transaction of this thread sees them). */
export function readRuns(s: IdRunStores): RunMeta[] {
  const runs: RunMeta[] = [];
  for (const key of s.idRuns.getKeys()) {
    const raw = s.idRuns.getBinaryFast(key);
    if (raw !== undefined) runs.push(decodeMeta(key, raw));
  }
  runs.sort((a, b) => a.first - b.first);
  for (let i = 1; i < runs.length; i++) {
    const [a, b] = [runs[i - 1] as RunMeta, runs[i] as RunMeta];
    if (b.first !== a.last + 1) throw new CorruptRecordError('ledger.mdb', `id_runs key ${b.id}`, `its blocks do not follow run ${a.id}'s`);
  }
  return runs;
}

/** The highest run number stored (-1: none): it changes whenever the set of runs does. */
export function newestRun(s: IdRunStores): number {
  for (const key of s.idRuns.getKeys({ reverse: true, limit: 1 })) return key;
  return -1;
}

/** A run with its fences, read for lookups. */
export function viewRun(s: IdRunStores, m: RunMeta): RunView {
  const raw = s.idChunks.getBinaryFast(chunkKey(m.id, FENCES));
  if (raw === undefined) throw new CorruptRecordError('ledger.mdb', `id_chunks run ${m.id} fences`, 'missing');
  const b = unseal(raw, `id_chunks run ${m.id} fences`);
  if (b.length !== 4 * m.chunks) throw new CorruptRecordError('ledger.mdb', `id_chunks run ${m.id} fences`, `${b.length} bytes`);
  const fences = new Uint32Array(m.chunks);
  for (let i = 0; i < m.chunks; i++) fences[i] = b.readUInt32LE(4 * i);
  const rawFilter = s.idChunks.getBinaryFast(chunkKey(m.id, FILTER));
  if (rawFilter === undefined) throw new CorruptRecordError('ledger.mdb', `id_chunks run ${m.id} filter`, 'missing');
  const f = unseal(rawFilter, `id_chunks run ${m.id} filter`);
  if (f.length !== filterBytes(m.entries)) throw new CorruptRecordError('ledger.mdb', `id_chunks run ${m.id} filter`, `${f.length} bytes`);
  return { ...m, fences, filter: new Uint8Array(f), checked: new Uint8Array(m.chunks) };
}

/**
 * Calls `found(block, word)` for each entry of `run` with `tag` (a word is the place in the
 * block, with the table's TXN_BIT for a transaction). The chunk read is a view valid until
 * this thread's next LMDB read, so the entries are gathered before any is visited.
 */
export function lookupRun(s: IdRunStores, run: RunView, tag: number, out: number[]): void {
  if (!mayHold(run, tag)) return;
  const f = run.fences;
  // The last chunk whose first tag is below `tag` may end with it; later ones may hold more.
  let lo = 0;
  let hi = f.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((f[mid] as number) < tag) lo = mid + 1;
    else hi = mid;
  }
  for (let c = Math.max(0, lo - 1); c < f.length && (c < lo || (f[c] as number) <= tag); c++) {
    const b = chunk(s, run, c);
    const n = b.length / ENTRY_BYTES;
    let a = 0;
    let z = n;
    while (a < z) {
      const mid = (a + z) >>> 1;
      if (b.readUInt32LE(mid * ENTRY_BYTES) < tag) a = mid + 1;
      else z = mid;
    }
    for (; a < n && b.readUInt32LE(a * ENTRY_BYTES) === tag; a++) out.push(b.readUInt32LE(a * ENTRY_BYTES + 4), b.readUInt32LE(a * ENTRY_BYTES + 8));
    if (a < n) return; // a greater tag follows in this chunk: no later chunk has `tag`
  }
}

/** Entries chunk `c` of a run holds (all but the last are full). */
export function chunkEntries(m: RunMeta, c: number): number {
  return c === m.chunks - 1 ? m.entries - c * CHUNK_ENTRIES : CHUNK_ENTRIES;
}

/** The key of a chunk being read (lmdb-js copies a key before it returns). */
const readKey = Buffer.alloc(8);

/** Chunk `c` of a run (a view), checked the first time this thread reads it. */
function chunk(s: IdRunStores, run: RunView, c: number): Buffer {
  readKey.writeUInt32BE(run.id, 0);
  readKey.writeUInt32BE(c, 4);
  const raw = s.idChunks.getBinaryFast(readKey);
  const where = `id_chunks run ${run.id} chunk ${c}`;
  if (raw === undefined) throw new CorruptRecordError('ledger.mdb', where, 'missing');
  if (run.checked[c] === 1) return Buffer.from(raw.buffer, raw.byteOffset, raw.length - 4);
  const b = unseal(raw, where);
  if (b.length !== chunkEntries(run, c) * ENTRY_BYTES) throw new CorruptRecordError('ledger.mdb', where, `${b.length} bytes`);
  run.checked[c] = 1;
  return b;
}

/**
 * Every run checked against the id records it points into (for `cairn check`): the runs follow
 * each other from the first block and end at or below the head; each chunk's checksum, size and
 * order; its fence; and each entry names an id of its block whose tag it carries. Calls
 * `problem` for each fault; returns the entries checked.
 */
export function checkRuns(s: IdRunStores, head: number, problem: (p: string) => void): number {
  let runs: RunMeta[];
  try {
    runs = readRuns(s);
  } catch (err) {
    problem(`id runs: ${(err as Error).message}`);
    return 0;
  }
  let firstBlock: number | undefined;
  for (const key of s.blockIds.getKeys({ limit: 1 })) firstBlock = key;
  if (runs.length && runs[0]?.first !== firstBlock)
    problem(`id run ${runs[0]?.id}: starts at block ${runs[0]?.first}, the first id record is block ${firstBlock}`);
  let checked = 0;
  for (const m of runs) {
    const where = `id run ${m.id} (blocks ${m.first}..${m.last})`;
    if (m.last > head) problem(`${where}: ends past the head ${head}`);
    let view: RunView;
    try {
      view = viewRun(s, m);
    } catch (err) {
      problem(`${where}: ${(err as Error).message}`);
      continue;
    }
    let prev = 0;
    for (let c = 0; c < m.chunks; c++) {
      let b: Buffer;
      try {
        b = Buffer.from(chunk(s, view, c));
      } catch (err) {
        problem(`${where}: ${(err as Error).message}`);
        continue;
      }
      if (b.readUInt32LE(0) !== view.fences[c]) problem(`${where} chunk ${c}: its fence is not its first tag`);
      for (let o = 0; o < b.length; o += ENTRY_BYTES) {
        const tag = b.readUInt32LE(o);
        if (tag < prev) problem(`${where} chunk ${c}: out of order at entry ${o / ENTRY_BYTES}`);
        if (!mayHold(view, tag)) problem(`${where} chunk ${c}: entry ${o / ENTRY_BYTES} is not in the run's filter`);
        prev = tag;
        const block = b.readUInt32LE(o + 4);
        const word = b.readUInt32LE(o + 8);
        const raw = block >= m.first && block <= m.last ? s.blockIds.getBinaryFast(block) : undefined;
        const rec = raw && Buffer.from(raw.buffer, raw.byteOffset, raw.length);
        const nB = rec && rec.length >= 12 ? rec.readUInt32LE(0) : -1;
        const k = word & 0x7fffffff;
        const index = word & 0x80000000 ? nB + k : k;
        const at = rec ? 8 + 4 * nB + 64 * index : -1;
        if (!rec || nB < 0 || (word & 0x80000000 ? k >= rec.readUInt32LE(4) : k >= nB) || at + 64 > rec.length - 4 || rec.readUInt32BE(at) !== tag)
          problem(`${where} chunk ${c}: entry ${o / ENTRY_BYTES} names no id of block ${block} with its tag`);
        checked++;
      }
    }
  }
  return checked;
}
