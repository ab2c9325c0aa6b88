/**
 * The committer's side of the id index's runs (their format and reads: src/store/id-runs.ts):
 * when a block makes a run due, the run is made from the tail's id records or from the runs to
 * merge, off the block's transaction, and written in the next block's.
 */
import { log } from '../log.js';
import { CorruptRecordError } from './alarms.js';
import { unseal } from './checksum.js';
import {
  CHUNK_ENTRIES,
  ENTRY_BYTES,
  FAN_IN,
  FENCES,
  FILTER,
  RUN_MAX_FACTOR,
  RUN_MIN,
  chunkEntries,
  chunkKey,
  encodeMeta,
  filterBytes,
  probes,
  readRuns,
  type IdRunStores,
  type RunMeta,
} from './id-runs.js';

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
    if (this.#buf.length !== chunkEntries(this.run, this.#chunk) * ENTRY_BYTES)
      throw new CorruptRecordError('ledger.mdb', where, `${this.#buf.length} bytes`);
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
