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
 * (IdRunWriter). Every write is in a block's own transaction, and the writer keeps nothing it
 * did not read in that transaction or an earlier one it saw land: a failed transaction leaves
 * nothing behind, and a restart continues.
 *
 * Runs only ever point at id records: an entry's answer is confirmed against the 64 id bytes
 * of the block's id record, as the table's is, so a stale or damaged entry never answers
 * wrongly; a chunk whose checksum does not match throws CorruptRecordError the first time a
 * thread reads it (then it is trusted: its bytes never change once written).
 */
import type { Database } from 'lmdb';
import { log } from '../log.js';
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
const RUN_MAX_FACTOR = FAN_IN * FAN_IN;

const ENTRY_BYTES = 12;
/** Key of a run's fences in the chunk store (a chunk number no run reaches). */
const FENCES = 0xffffffff;
/** Key of a run's filter in the chunk store. */
const FILTER = 0xfffffffe;
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
function filterBytes(entries: number): number {
  return Math.max(8, Math.ceil((entries * FILTER_BITS_PER_ID) / 8));
}

/** Calls `bit` with each of a tag's probe positions in a filter of `bits` bits (double hashing). */
function probes(tag: number, bits: number, bit: (at: number) => boolean): boolean {
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

function encodeMeta(m: RunMeta): Buffer {
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

/** The key of a chunk being read (lmdb-js copies a key before it returns). */
const readKey = Buffer.alloc(8);

/** Chunk `c` of a run (a view), checked the first time this thread reads it. */
function chunk(s: IdRunStores, run: RunView, c: number): Buffer {
  readKey.writeUInt32BE(run.id, 0);
  readKey.writeUInt32BE(c, 4);
  const raw = s.idChunks.getBinaryFast(readKey);
  const where = `id_chunks run ${run.id} chunk ${c}`;
  if (raw === undefined) throw new CorruptRecordError('ledger.mdb', where, 'missing');
  const expect = c === run.chunks - 1 ? run.entries - c * CHUNK_ENTRIES : CHUNK_ENTRIES;
  if (run.checked[c] === 1) return Buffer.from(raw.buffer, raw.byteOffset, raw.length - 4);
  const b = unseal(raw, where);
  if (b.length !== expect * ENTRY_BYTES) throw new CorruptRecordError('ledger.mdb', where, `${b.length} bytes`);
  run.checked[c] = 1;
  return b;
}

/** Ids in a block's id record (batches and transactions), from its first 8 bytes. */
function idsIn(rec: Buffer): number {
  return rec.readUInt32LE(0) + rec.readUInt32LE(4);
}

/** What the writer knows, as of the last block whose transaction it wrote in. */
interface WriterState {
  /** The block whose transaction it last wrote in. */
  lastBlock: number;
  runs: RunMeta[];
  /** The last block in a run (first block - 1 when there is none). */
  through: number;
  /** Ids in blocks after `through`, up to `lastBlock`. */
  tail: number;
  nextId: number;
}

/** A run made in memory, to be written in a block's transaction. */
interface Built {
  first: number;
  last: number;
  entries: number;
  chunks: Buffer[];
  fences: Buffer;
  filter: Buffer;
}

/** The run being made: from the tail's blocks (flush) or from FAN_IN runs (merge). */
interface Job {
  kind: 'flush' | 'merge';
  first: number;
  last: number;
  inputs: RunMeta[];
  ready?: Built;
  failed?: unknown;
  /** Settles when the job is ready or failed. */
  done: Promise<void>;
  /** When it started (performance.now()). */
  started: number;
}

/** CPU a job takes on the committer's thread before it lets the thread do other work. */
const SLICE_MS = 4;
/** How long a flush waits for its last block's record to become readable (it is written in the transaction that started it). */
const RECORD_WAIT_MS = 30_000;

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * The committer's side. Called in each block's transaction once its id record is written: it
 * counts the ids after the last run and, when a run is due, starts making it. The work (reading
 * the tail's id records or the runs to merge, sorting, the chunks and the filter) runs on the
 * committer's thread in slices of a few milliseconds between its other work, reading what is
 * durable; the run is written, with the merged runs removed, in the transaction of the first
 * block after it is ready. So a block's transaction only writes a ready run (~10 MB at most for
 * the largest merge), never makes one. One run is made at a time. What it made rests only on
 * records that never change, and a writer that reloads its state drops a job in progress.
 */
export class IdRunWriter {
  #state: WriterState | undefined;
  #job: Job | undefined;
  readonly #min: number;
  readonly #max: number;
  /** Runs written and merged since start (for tests and metrics). */
  written = 0;
  merged = 0;

  constructor(
    private readonly s: IdRunStores,
    runMin = RUN_MIN,
  ) {
    this.#min = runMin;
    this.#max = runMin * RUN_MAX_FACTOR;
  }

  /** Drops the run being made (the committer stopped: nothing it makes would be written). */
  stop(): void {
    this.#job = undefined;
    this.#state = undefined;
  }

  /** Whether a run is being made, or made and waiting for the next block to be written. */
  get busy(): boolean {
    return this.#job !== undefined;
  }

  /** Resolves once no run is being made (one that is ready waits for the next block). */
  async idle(): Promise<void> {
    while (this.#job && !this.#job.ready && this.#job.failed === undefined) await this.#job.done;
  }

  /** Block `block`'s id record is written in the current transaction: counts it, writes a ready run, starts the next. */
  afterBlock(block: number): void {
    const prior = this.#state;
    this.#state = undefined; // set again only if this completes: a throw aborts the transaction
    let st: WriterState;
    if (prior && prior.lastBlock === block - 1) st = prior;
    else {
      st = this.#load(block);
      this.#job = undefined; // made for a state this writer no longer holds
    }
    const rec = this.s.blockIds.getBinaryFast(block);
    if (rec === undefined || rec.length < 12) throw new Error(`block ${block} has no id record to index`);
    st.tail += idsIn(Buffer.from(rec.buffer, rec.byteOffset, rec.length));
    st.lastBlock = block;
    const job = this.#job;
    if (job?.ready) {
      this.#job = undefined;
      this.#publish(st, job, job.ready, block);
    } else if (job && job.failed !== undefined) {
      this.#job = undefined;
      log.error(`id index: the ${job.kind} of blocks ${job.first}..${job.last} failed: ${String(job.failed)}; it is tried again`);
    }
    if (!this.#job) this.#startDue(st, block);
    this.#state = st;
  }

  /** The state as this transaction sees it: the runs, and the ids of the blocks after them. */
  #load(block: number): WriterState {
    const runs = readRuns(this.s);
    let through = block - 1;
    if (runs.length) through = (runs[runs.length - 1] as RunMeta).last;
    else for (const key of this.s.blockIds.getKeys({ limit: 1 })) through = key - 1;
    let tail = 0;
    for (let b = through + 1; b < block; b++) {
      const rec = this.s.blockIds.getBinaryFast(b);
      if (rec !== undefined && rec.length >= 12) tail += idsIn(Buffer.from(rec.buffer, rec.byteOffset, rec.length));
    }
    let nextId = 0;
    for (const r of runs) nextId = Math.max(nextId, r.id + 1);
    return { lastBlock: block - 1, runs, through, tail, nextId };
  }

  /** Starts the merge that is due, else the flush that is due. */
  #startDue(st: WriterState, block: number): void {
    const n = st.runs.length;
    if (n >= FAN_IN) {
      const group = st.runs.slice(n - FAN_IN);
      const t = this.#tier((group[0] as RunMeta).entries);
      if (t !== Number.POSITIVE_INFINITY && group.every((r) => this.#tier(r.entries) === t)) {
        this.#start({ kind: 'merge', first: (group[0] as RunMeta).first, last: (group[FAN_IN - 1] as RunMeta).last, inputs: group });
        return;
      }
    }
    if (st.tail >= this.#min) this.#start({ kind: 'flush', first: st.through + 1, last: block, inputs: [] });
  }

  #start(spec: Pick<Job, 'kind' | 'first' | 'last' | 'inputs'>): void {
    let settle = (): void => {};
    const job: Job = { ...spec, started: performance.now(), done: new Promise<void>((r) => (settle = r)) };
    this.#job = job;
    // After this turn: the transaction that started it is written first (its block's record, for a flush).
    setImmediate(() => {
      const make = job.kind === 'flush' ? this.#fromRecords(job, job.first, job.last, true) : this.#mergeRuns(job);
      make
        .then((built) => {
          if (built) job.ready = built;
        })
        .catch(async (err: unknown) => {
          if (job.kind === 'merge' && err instanceof CorruptRecordError && this.#job === job) {
            // The runs only point into the id records: the merged run is made again from them.
            log.error(
              `id index: ${err.message}: runs ${job.inputs.map((r) => r.id).join(', ')} are made again from the id records of blocks ${job.first}..${job.last}`,
            );
            const built = await this.#fromRecords(job, job.first, job.last, false).catch((e: unknown) => {
              job.failed = e;
              return undefined;
            });
            if (built) job.ready = built;
            return;
          }
          job.failed = err;
        })
        .finally(settle);
    });
  }

  /** Writes a ready run in this block's transaction (and removes the runs it merged). */
  #publish(st: WriterState, job: Job, built: Built, block: number): void {
    const t0 = performance.now();
    if (job.kind === 'flush' && built.first !== st.through + 1) return; // not the tail any more (cannot happen while this writer holds its state)
    const at = job.kind === 'merge' ? st.runs.findIndex((r) => r.id === (job.inputs[0] as RunMeta).id) : -1;
    if (job.kind === 'merge' && (at < 0 || job.inputs.some((r, i) => st.runs[at + i]?.id !== r.id))) return;
    const id = st.nextId++;
    const s = this.s;
    for (const [i, c] of built.chunks.entries()) s.idChunks.put(chunkKey(id, i), c);
    s.idChunks.put(chunkKey(id, FENCES), built.fences);
    s.idChunks.put(chunkKey(id, FILTER), built.filter);
    const meta: RunMeta = { id, first: built.first, last: built.last, entries: built.entries, chunks: built.chunks.length };
    s.idRuns.put(id, encodeMeta(meta));
    if (job.kind === 'flush') {
      st.runs.push(meta);
      st.tail -= meta.entries;
      st.through = meta.last;
      this.written++;
    } else {
      for (const r of job.inputs) removeRun(s, r.id);
      st.runs.splice(at, job.inputs.length, meta);
      this.merged++;
    }
    log.debug(
      `id index: block ${block}: ${job.kind === 'flush' ? 'run' : 'merged run'} ${id} of blocks ${meta.first}..${meta.last} (${meta.entries} ids) made in ${(t0 - job.started).toFixed(0)} ms, written in ${(performance.now() - t0).toFixed(1)} ms; ${st.runs.length} runs`,
    );
  }

  /**
   * Waits until `ready()` (a record written by a transaction under way becomes readable in this
   * thread); false when the job was dropped meanwhile. Throws when it is not there after RECORD_WAIT_MS.
   */
  async #visible(job: Job, ready: () => boolean, what: string): Promise<boolean> {
    for (let waited = 0; !ready(); waited += 10) {
      if (waited >= RECORD_WAIT_MS) throw new Error(`${what} is not readable after ${RECORD_WAIT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 10));
      if (this.#job !== job) return false;
    }
    return this.#job === job;
  }

  /** A run's size tier: runs within a factor FAN_IN of each other share one; the largest never merge. */
  #tier(entries: number): number {
    if (entries >= this.#max) return Number.POSITIVE_INFINITY;
    return Math.floor(Math.log(Math.max(1, entries / this.#min)) / Math.log(FAN_IN) + 1e-9);
  }

  /**
   * A run of the ids in the id records of blocks `first`..`last`, sorted by tag. With `cap`, it
   * ends at the last whole block that keeps it within the largest run (at least one block).
   * Undefined when the job was dropped meanwhile.
   */
  async #fromRecords(job: Job, first: number, last: number, cap: boolean): Promise<Built | undefined> {
    const tags: number[] = [];
    const blocks: number[] = [];
    const words: number[] = [];
    // The last block's transaction may still be under way: once its record is readable, so is every earlier one.
    if (!(await this.#visible(job, () => this.s.blockIds.doesExist(last), `block_ids key ${last}`))) return undefined;
    let b = first;
    let slice = performance.now() + SLICE_MS;
    for (; b <= last; b++) {
      if (performance.now() > slice) {
        await nextTurn();
        if (this.#job !== job) return undefined;
        slice = performance.now() + SLICE_MS;
      }
      const raw = this.s.blockIds.getBinaryFast(b);
      if (raw === undefined) continue; // a gap is the start check's to report (IdIndex.syncComplete)
      const rec = unseal(raw, `block_ids key ${b}`);
      const nB = rec.readUInt32LE(0);
      const nT = rec.readUInt32LE(4);
      if (cap && tags.length > 0 && tags.length + nB + nT > this.#max) break;
      const ids = 8 + 4 * nB;
      for (let i = 0; i < nB + nT; i++) {
        tags.push(rec.readUInt32BE(ids + 64 * i));
        blocks.push(b);
        words.push(i < nB ? i : ((i - nB) | 0x80000000) >>> 0);
      }
    }
    // Sorted by tag: each entry's key is tag * 2^21 + its index, exact in a double (index < 2^21).
    const keys = new Float64Array(tags.length);
    for (let i = 0; i < tags.length; i++) keys[i] = (tags[i] as number) * 2_097_152 + i;
    keys.sort();
    const out = new RunBuilder(first, keys.length);
    for (let k = 0; k < keys.length; k++) {
      if ((k & 4095) === 0 && performance.now() > slice) {
        await nextTurn();
        if (this.#job !== job) return undefined;
        slice = performance.now() + SLICE_MS;
      }
      const i = (keys[k] as number) % 2_097_152;
      out.push(tags[i] as number, blocks[i] as number, words[i] as number);
    }
    return out.finish(b - 1);
  }

  /** The job's runs merged into one, read from this thread's snapshot (runs never change once written). */
  async #mergeRuns(job: Job): Promise<Built | undefined> {
    // The newest input may have been written in the transaction that started this job.
    const newest = job.inputs[job.inputs.length - 1] as RunMeta;
    if (!(await this.#visible(job, () => this.s.idRuns.doesExist(newest.id), `id_runs key ${newest.id}`))) return undefined;
    const readers = job.inputs.map((r) => new EntryReader(this.s, r));
    const out = new RunBuilder(
      job.first,
      job.inputs.reduce((n, r) => n + r.entries, 0),
    );
    let slice = performance.now() + SLICE_MS;
    for (let k = 0; ; k++) {
      if ((k & 4095) === 0 && performance.now() > slice) {
        await nextTurn();
        if (this.#job !== job) return undefined;
        slice = performance.now() + SLICE_MS;
      }
      let best = -1;
      let bestTag = 0;
      for (let i = 0; i < readers.length; i++) {
        const r = readers[i] as EntryReader;
        if (r.done) continue;
        if (best < 0 || r.tag < bestTag) {
          best = i;
          bestTag = r.tag;
        }
      }
      if (best < 0) break;
      const r = readers[best] as EntryReader;
      out.push(r.tag, r.block, r.word);
      r.next();
    }
    return out.finish(job.last);
  }
}

/** Removes a run: its descriptor, and every record under its number in the chunk store (its chunks, fences and filter). */
function removeRun(s: IdRunStores, id: number): void {
  s.idRuns.remove(id);
  const keys = Array.from(s.idChunks.getKeys({ start: chunkKey(id, 0), end: chunkKey(id + 1, 0) }), (k) => Buffer.from(k));
  for (const key of keys) s.idChunks.remove(key);
}

/** Makes a run's chunks as entries come in tag order, with its fences and filter, in memory. */
class RunBuilder {
  readonly #chunks: Buffer[] = [];
  #buf = Buffer.allocUnsafe(CHUNK_ENTRIES * ENTRY_BYTES);
  #n = 0;
  #entries = 0;
  readonly #fences: number[] = [];
  readonly #filter: Uint8Array;
  readonly #expect: number;

  constructor(
    readonly first: number,
    /** Entries the run will hold (its filter's size). */
    expect: number,
  ) {
    this.#expect = expect;
    this.#filter = new Uint8Array(filterBytes(expect));
  }

  push(tag: number, block: number, word: number): void {
    const o = this.#n * ENTRY_BYTES;
    if (this.#n === 0) this.#fences.push(tag);
    const f = this.#filter;
    probes(tag, f.length * 8, (at) => {
      f[at >>> 3] = (f[at >>> 3] as number) | (1 << (at & 7));
      return true;
    });
    this.#buf.writeUInt32LE(tag, o);
    this.#buf.writeUInt32LE(block, o + 4);
    this.#buf.writeUInt32LE(word, o + 8);
    this.#entries++;
    if (++this.#n === CHUNK_ENTRIES) this.#emit();
  }

  #emit(): void {
    if (this.#n === 0) return;
    this.#chunks.push(this.#n === CHUNK_ENTRIES ? this.#buf : Buffer.from(this.#buf.subarray(0, this.#n * ENTRY_BYTES)));
    this.#buf = Buffer.allocUnsafe(CHUNK_ENTRIES * ENTRY_BYTES);
    this.#n = 0;
  }

  finish(last: number): Built {
    this.#emit();
    if (this.#entries !== this.#expect)
      throw new Error(`a run of blocks ${this.first}..${last}: ${this.#entries} entries made, ${this.#expect} expected`);
    const fences = Buffer.allocUnsafe(4 * this.#fences.length);
    for (const [i, f] of this.#fences.entries()) fences.writeUInt32LE(f, 4 * i);
    return { first: this.first, last, entries: this.#entries, chunks: this.#chunks, fences, filter: Buffer.from(this.#filter) };
  }
}

/** Reads a stored run's entries in order (one chunk copied at a time). */
class EntryReader {
  #chunk = 0;
  #buf: Buffer = Buffer.alloc(0);
  #at = 0;
  done = false;
  tag = 0;
  block = 0;
  word = 0;

  constructor(
    private readonly s: IdRunStores,
    private readonly run: RunMeta,
  ) {
    this.#load();
  }

  #load(): void {
    if (this.#chunk >= this.run.chunks) {
      this.done = true;
      return;
    }
    const where = `id_chunks run ${this.run.id} chunk ${this.#chunk}`;
    const raw = this.s.idChunks.getBinaryFast(chunkKey(this.run.id, this.#chunk));
    if (raw === undefined) throw new CorruptRecordError('ledger.mdb', where, 'missing');
    this.#buf = Buffer.from(unseal(raw, where));
    const expect = this.#chunk === this.run.chunks - 1 ? this.run.entries - this.#chunk * CHUNK_ENTRIES : CHUNK_ENTRIES;
    if (this.#buf.length !== expect * ENTRY_BYTES) throw new CorruptRecordError('ledger.mdb', where, `${this.#buf.length} bytes`);
    this.#at = 0;
    this.#read();
  }

  #read(): void {
    const o = this.#at * ENTRY_BYTES;
    this.tag = this.#buf.readUInt32LE(o);
    this.block = this.#buf.readUInt32LE(o + 4);
    this.word = this.#buf.readUInt32LE(o + 8);
  }

  next(): void {
    if (++this.#at * ENTRY_BYTES < this.#buf.length) this.#read();
    else {
      this.#chunk++;
      this.#load();
    }
  }
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
