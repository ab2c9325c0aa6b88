/**
 * A cluster member's end of the log, on the HTTP thread. In place of the pending pool it
 * takes the verified batches of POST /batches, packs them into envelopes (bounded count
 * and bytes, a member's appends spaced a little apart), appends each to the log in etcd
 * and answers only once etcd has committed it (the 202). It follows the log from the
 * revision the committer last applied, checks each envelope (a registered member's
 * signature, a readable layout) and hands them, in order, to the committer; garbage and
 * forged envelopes are refused on every member alike. It knows which batches are pending:
 * in the log, not applied here.
 */
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import { log } from '../log.js';
import type { Signer } from '../crypto/secp256k1.js';
import type { ToCommitter } from '../ledger/protocol.js';
import { LedgerUnavailable } from '../ledger/pending-writer.js';
import type { AckWriter } from '../ledger/ack-writer.js';
import type { ChainHead } from '../store/ledger-stores.js';
import type { VerifyResult } from '../ledger/verify.js';
import { verify } from '../crypto/secp256k1.js';
import { BlockHeader, decode } from '../proto/index.js';
import type { LogEnvelope } from './protocol.js';
import {
  ENVELOPE_OVERHEAD,
  batchIdOf,
  decodeCut,
  decodeEnvelope,
  delimitedFields,
  encodeCut,
  encodeEnvelope,
  EnvelopeError,
  decodeRemoval,
  isCut,
  isRemoval,
} from './envelope.js';
import { CHAIN_KEY, FLOOR, LOG, NODES, REMOVED, etcdReason, isRemovalOf } from './etcd.js';
import { consensusRevision } from './consensus.js';
import { Outage } from './outage.js';
import { FreshRead } from './fresh-read.js';

/** The 503 of a member that was removed from the cluster. */
const REMOVED_MESSAGE = 'this node was removed from the cluster (cairn cluster remove): it acknowledges no batch';

/** An envelope holds this many batches at most. */
export const ENVELOPE_MAX_BATCHES = 1000;
/** … and this many bytes (etcd refuses requests over 1.5 MiB by default). */
export const ENVELOPE_MAX_BYTES = 1024 * 1024;
/**
 * This member's appends start at least this far apart (ms) for every member that appended
 * in the last APPENDERS_WINDOW_MS (itself included): a batch that comes when none started
 * for that long goes at once, and under load the batches that come meanwhile share one
 * envelope. Every envelope costs an etcd write (a Raft entry and a sync on a quorum) and, on
 * every member, a watch event and a signature check, so the envelope rate, not the batch
 * rate, is what etcd and the followers pay for: the members that ingest share one budget of
 * envelopes. A fixed spacing (25 ms) did as well with the load on all three nodes but
 * made one node loaded alone wait. This is the default of `--cluster-append-spacing-ms`,
 * which trades a submit's wait under load for CPU per batch; the runs behind it are in
 * docs/performance.md (the cluster section).
 */
export const APPEND_SPACING_MS = 8;
/** A member that appended within this long counts as appending (ms). */
const APPENDERS_WINDOW_MS = 1_000;
/**
 * Appends in flight at most: while one is, the next envelope keeps filling (group commit),
 * so that envelopes grow with the load.
 */
const MAX_APPENDS = 1;
/**
 * An append not answered after this long stops holding its slot (it may wait out etcd's
 * request timeout on a member that lost its leader): the next envelopes go meanwhile.
 */
const SLOW_APPEND_MS = 300;
/** Envelopes handed to the committer and not applied yet, at most (the rest wait here). */
const MAX_FORWARDED = 64;
/**
 * How far the follower reads ahead of the committer: blocks cut and not yet handed over, and
 * entries read and not yet checked (the checks of --verify all take time). Past either, the
 * watch stops and the log is read again from there once half of it is applied: the entries
 * wait in etcd (the retention keeps them for this member), not in this process's memory.
 */
const READ_AHEAD_BLOCKS = 256;
/** … and entries: this many per block of the bound (4,096). */
const READ_AHEAD_ENTRIES_PER_BLOCK = 16;
/** Wait between checks whether a paused follower may read on (ms). */
const READ_AHEAD_POLL_MS = 20;
/** Wait before a failed read of the log is tried again (ms). */
const RETRY_MS = 500;
/**
 * The follower's stall guard (ms): when neither its read position nor its applied one has
 * moved for this long while etcd holds a log entry at the read position (a watch not
 * confirmed, a stream open but silent, a check that failed, anything else that stops it),
 * the follower starts again from what its committer applied. It reads etcd only then.
 */
const STALL_MS = 5_000;
/** How often the stall guard looks (ms). */
const STALL_LOOK_MS = 1_000;
/**
 * A block of the log closes at the first cut of it, or once it holds this many batches or
 * bytes: a rule of the log alone, so every member cuts the same blocks (the same on all
 * members whatever their settings).
 */
const BLOCK_MAX_BATCHES = 1000;
const BLOCK_MAX_BYTES = 16 * 1024 * 1024;
/**
 * The block's linger, kept by the member whose envelope opened it: it appends its cut once
 * no envelope came for CUT_QUIET_MS, or CUT_MAX_MS after the block opened (ms). A quiet log
 * has a block cut 40 ms after its one envelope; under load, the first envelope appended
 * CLOSE_AGE_MS after the block opened closes it, so blocks grow for 60 ms or more without a
 * cut entry. Larger blocks cost every member less to apply a batch (the committer's work per
 * block is spread over more batches). Measured with bench/cluster.ts on the slower 2-core
 * box, six runs of 40/100/60 ms and one of 15/100/60 against four of 15/40/20
 * (docs/performance.md): 35 to 52 batches a block under load on all three against 24 to
 * 28, an apply-only member's CPU 300 to 420 µs a batch against 335 to 480 (0.32 to 0.48 of
 * the single node's, 0.41 on the mean, against 0.45 to 0.58, 0.51), the three nodes' rate
 * unchanged, the p99 of commit on all three higher (1.1 to 1.7 s against 0.7 to 1.0 s with
 * the box saturated).
 * On the first 2-core box, before envelopes closed blocks, when the cut ended every block
 * (load on all three nodes / on one node):
 * - a fixed 5 ms: 28 batches a block, 1,059 / 1,883 batches/s, apply-only CPU 155 µs a batch;
 * - a fixed 30 ms: 58 and 95 a block, 1,142 / 2,002 batches/s, 140 µs;
 * - quiet 5 ms, at most 30: 34 and 35 a block, 1,170 / 1,724 batches/s, 162 µs (a single
 *   ingester's appends come further apart than 5 ms);
 * - quiet 15 ms, at most 30: 57 and 98 a block, 1,160 / 2,177 batches/s, 120 µs.
 */
const CUT_QUIET_MS = 40;
const CUT_MAX_MS = 100;
/**
 * An envelope that a member appends while the block it sees open is this old (ms) closes
 * that block (CEV2, docs/cluster.md): under load, blocks end at an envelope and the log
 * needs no cut entries, each of which cost an etcd write and, on every member, a watch event
 * and a signature check. CUT_MAX_MS stays above it, so that the opener's cut is the fallback
 * for a log where no envelope comes, not a race with the closing one.
 */
const CLOSE_AGE_MS = 60;
/** How long any member waits before it cuts a block another member opened (that one may be gone) (ms). */
const CUT_TAKEOVER_MS = 300;
/** A status wait whose read of the log's tip failed asks again after this long (ms). */
const TIP_RETRY_MS = 200;
/** Blocks asked of a member per request when catching up. */
const CATCH_UP_PAGE = 64;
/** Longest wait for a member's blocks (ms). */
const FETCH_TIMEOUT_MS = 10_000;

/** The block being filled from the log: where it began, its time and its batches. */
interface OpenBlock {
  first: number;
  ts: number;
  batches: Array<{ id: string; bytes: Uint8Array }>;
  bytes: number;
  timer: NodeJS.Timeout | null;
  /** Opened by this member's envelope: this member cuts it (after the linger). */
  mine: boolean;
  openedAt: number;
  /** Its cut was appended (a later one only if that one does not come back). */
  cutSent: boolean;
  /** An envelope of this member that closes it is being appended: no cut meanwhile. */
  closeSent: boolean;
}

/** A BatchList of one batch: field 1, length-delimited. */
function batchListOf(batch: Uint8Array): Uint8Array {
  const len: number[] = [];
  for (let v = batch.length; ; v = Math.floor(v / 128)) {
    if (v < 128) {
      len.push(v);
      break;
    }
    len.push((v % 128) | 128);
  }
  return Buffer.concat([Buffer.from([0x0a, ...len]), batch]);
}

/** A block fetched from a member, checked: what the committer must make of it. */
interface FetchedBlock {
  num: number;
  id: string;
  rev: number;
  batches: Array<{ id: string; bytes: Uint8Array }>;
}

export interface ClusterLinkOptions {
  client: Etcd3;
  /** The node's key: it signs this member's envelopes. */
  signer: Signer;
  /** Next log revision to read (the committer's: the last one applied + 1). */
  nextRev: number;
  tell(m: ToCommitter): void;
  /** Null while batches may be acknowledged; else the message of the 503. */
  refusal(): string | null;
  /**
   * Every member re-verifies every batch (the chain's --verify all): the verify pool's check
   * of BatchList bodies. Null: the ingesting member's checks are trusted.
   */
  verify: ((bodies: Uint8Array[]) => Promise<VerifyResult[]>) | null;
  /** The chain key's public key: blocks fetched from a member must be signed with it. */
  chainKey: string;
  /** The other live members' ledger gateway URLs (where blocks are fetched from). */
  peers(): string[];
  /** The committer's last durable head. */
  head(): ChainHead;
  /** This member's chain is not the cluster's. */
  diverged(cause: string): void;
  /** Test hook: the read-ahead bound in blocks (READ_AHEAD_BLOCKS; entries READ_AHEAD_ENTRIES_PER_BLOCK times it). */
  readAheadBlocks?: number;
  /**
   * Test hook: the first watch stalls after this many entries (its stream stays open); what
   * it carries after them is delivered once the follower has started again.
   */
  deafWatchAfter?: number;
  /** The spacing of this member's appends per appending member (ms; APPEND_SPACING_MS unless set). */
  appendSpacingMs: number;
}

interface Packing {
  batches: Array<{ id: string; bytes: Uint8Array }>;
  bytes: number;
  done: Promise<void>;
  resolve(): void;
  reject(e: unknown): void;
  timer: NodeJS.Timeout | null;
  /** Its wait is over: it goes as soon as an append may start. */
  due: boolean;
}

export class ClusterLink implements AckWriter {
  readonly #o: ClusterLinkOptions;
  readonly #keyPrefix: string;
  #seq = 0;
  /** Pending batch ids, by the revision of the envelope that holds them. */
  readonly #pendingAt = new Map<string, number>();
  readonly #byRev = new Map<number, string[]>();
  /** Batches being appended (not committed by etcd yet), by id. */
  readonly #writing = new Map<string, Promise<void>>();
  #packing: Packing | null = null;
  /** Envelopes full or due, waiting for an append slot, in order. */
  readonly #waiting: Packing[] = [];
  /** Appends in flight, and when each started. */
  readonly #appends = new Map<Promise<void>, number>();
  #slowCheck: NodeJS.Timeout | null = null;
  /** When this member's last append started (Date.now()). */
  #lastAppendAt = 0;
  /** When an envelope of each member was last read from the log (Date.now()). */
  readonly #appendedAt = new Map<string, number>();
  /** Registered members' keys and the revision each registered at. */
  #members = new Map<string, number>();
  /** Members taken out (`cairn cluster remove`) and the log revision of each removal. */
  readonly #removed = new Map<string, number>();
  /** The follower: next revision to read, envelopes read and not yet handed over, handed over and not applied. */
  #readNext: number;
  /** Status reads waiting for the log to be read up to a revision (readThrough). */
  readonly #readWaits = new Set<{ target: number; resolve: () => void; timer: NodeJS.Timeout }>();
  /** The log's tip as etcd holds it now, read for readThrough: one read in flight, shared. */
  readonly #tip = new FreshRead(() => this.#readTip());
  /** The last catch-up's reason and position, as logged. */
  #catchUpSaid = '';
  /** The log cannot be read (etcd away): said when it starts, every 30 s while it lasts, and when it ends. */
  #unreadable = new Outage('cluster log unreadable');
  /** Entries read and waiting for their check (the #order chain). */
  #taking = 0;
  /** Ends the current watch (it read too far ahead, or the follower starts again); null while none runs. */
  #endWatch: (() => void) | null = null;
  readonly #aheadBlocks: number;
  readonly #aheadEntries: number;
  readonly #spacing: number;
  /** The key of the entry taken at #readNext - 1 (read as text only to name it in a warning). */
  #lastKey: Buffer = Buffer.alloc(0);
  readonly #backlog: LogEnvelope[] = [];
  /** Revisions handed to the committer and not applied yet, ascending. */
  #forwarded: number[] = [];
  /** Catch-up's waits for the committer to apply a revision. */
  #appliedWaits: Array<{ rev: number; resolve: () => void }> = [];
  /** The block being filled (envelopes read since the last cut). */
  #open: OpenBlock | null = null;
  #applied: number;
  /** The last revision of a durable round here: what the live record names (the retention's floor). */
  #durable: number;
  #watcher: Watcher | null = null;
  #generation = 0;
  #order: Promise<void> = Promise.resolve();
  #closed = false;
  /** Entries the current watch may still deliver (the deafWatchAfter test hook); Infinity: no limit. */
  #deafIn: number;
  /** The deafWatchAfter test hook: the entries its stalled stream holds back. */
  readonly #held: Array<() => void> = [];
  /** The stall guard: its timer, the positions it last saw and since when, a look in progress. */
  #guard: NodeJS.Timeout | null = null;
  #guardSeen = { readNext: 0, applied: 0, since: 0 };
  #guardLooking = false;
  /** A catch-up from the members' blocks is under way (its fetches may take a while: no stall). */
  #catchingUp = false;

  constructor(o: ClusterLinkOptions) {
    this.#o = o;
    this.#keyPrefix = `${LOG}${o.signer.publicKey}/${Date.now().toString(16)}-`;
    this.#readNext = o.nextRev;
    this.#applied = o.nextRev - 1;
    this.#durable = o.nextRev - 1;
    this.#aheadBlocks = o.readAheadBlocks ?? READ_AHEAD_BLOCKS;
    this.#aheadEntries = this.#aheadBlocks * READ_AHEAD_ENTRIES_PER_BLOCK;
    this.#spacing = o.appendSpacingMs;
    this.#deafIn = o.deafWatchAfter ?? Number.POSITIVE_INFINITY;
  }

  /** Starts following the log. */
  start(): void {
    void this.#follow(this.#generation);
    this.#guardSeen = { readNext: this.#readNext, applied: this.#applied, since: Date.now() };
    this.#guard = setInterval(() => this.#lookForStall(), STALL_LOOK_MS);
    this.#guard.unref();
  }

  /**
   * The stall guard's look: the follower made no progress for STALL_MS and etcd holds an
   * entry at its read position: it starts again from its committer's position.
   */
  #lookForStall(): void {
    const seen = this.#guardSeen;
    const now = Date.now();
    if (this.#readNext !== seen.readNext || this.#applied !== seen.applied || this.#catchingUp) {
      this.#guardSeen = { readNext: this.#readNext, applied: this.#applied, since: now };
      return;
    }
    // A ledger in fault (its committer stopped; a recovery restarts it) is not a stalled follower.
    if (now - seen.since < STALL_MS || this.#guardLooking || this.#closed || this.#o.refusal() !== null) return;
    this.#guardLooking = true;
    const at = this.#readNext;
    this.#o.client
      .getAll()
      .prefix(LOG)
      .minModRevision(String(at))
      .limit(1)
      .keys()
      .then(
        (keys) => {
          if (keys.length === 0 || this.#closed || this.#readNext !== seen.readNext || this.#applied !== seen.applied) return;
          this.#restart(`made no progress for ${Date.now() - seen.since} ms while the log holds entries from revision ${at} on`);
        },
        // etcd does not answer: nothing to read meanwhile.
        () => undefined,
      )
      .finally(() => {
        this.#guardLooking = false;
      });
  }

  /**
   * The follower starts again from what the committer applied: the watch, the entries being
   * checked, the open block and the blocks not handed over are dropped, and the log read again
   * (rounds the committer holds already are not taken twice: it passes over revisions it has).
   */
  #restart(why: string): void {
    const from = this.#applied + 1;
    log.warn(
      `the cluster log follower ${why} (read to ${this.#readNext - 1}, applied ${this.#applied}, ${this.#taking} entries being checked, ` +
        `${this.#backlog.length} blocks waiting, ${this.#forwarded.length} with the committer${this.#open ? `, a block open since revision ${this.#open.first}` : ''}): ` +
        `reading the log again from revision ${from}`,
    );
    this.#readAgainFrom(from);
  }

  /**
   * A new follower from revision `from`: the current one's watch, entries being checked, open
   * block and blocks not handed over are dropped (its generation ends).
   */
  #readAgainFrom(from: number): void {
    this.#generation++;
    const w = this.#watcher;
    this.#watcher = null;
    // Its loop ends now, whether or not etcd ever confirms the cancel (a stream that hangs).
    this.#endWatch?.();
    this.#endWatch = null;
    void w?.cancel().catch(() => undefined);
    this.#backlog.length = 0;
    this.#forwarded = [];
    this.#dropOpen();
    this.#readNext = from;
    this.#lastKey = Buffer.alloc(0);
    this.#taking = 0;
    this.#deafIn = Number.POSITIVE_INFINITY;
    this.#order = Promise.resolve();
    this.#guardSeen = { readNext: from, applied: this.#applied, since: Date.now() };
    void this.#follow(this.#generation);
    // The deafWatchAfter test hook: the stalled stream resumes now.
    for (const f of this.#held.splice(0)) f();
  }

  /** The block being filled is dropped (its timer too). */
  #dropOpen(): void {
    if (this.#open?.timer) clearTimeout(this.#open.timer);
    this.#open = null;
  }

  get size(): number {
    return this.#pendingAt.size;
  }

  /**
   * The last log revision applied here, the last one durable here (a restart reads the log
   * from the revision after it), and the newest revision etcd has shown.
   */
  get position(): { applied: number; durable: number; seen: number } {
    return { applied: this.#applied, durable: this.#durable, seen: Math.max(this.#applied, this.#readNext - 1) };
  }

  has(id: string): boolean {
    return this.#pendingAt.has(id);
  }

  isWriting(id: string): boolean {
    return this.#writing.has(id);
  }

  settle(id: string): void {
    this.#pendingAt.delete(id);
  }

  /** Appends the batches to the log; resolves once etcd has committed the envelope holding them. */
  async persist(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    const refusal = this.#o.refusal();
    if (refusal !== null) throw new LedgerUnavailable(refusal);
    if (this.removedAt !== null) throw new LedgerUnavailable(REMOVED_MESSAGE);
    const waits: Array<Promise<void>> = [];
    for (const b of batches) {
      if (b.bytes.length + ENVELOPE_OVERHEAD > ENVELOPE_MAX_BYTES)
        throw new LedgerUnavailable(
          `a batch of ${b.bytes.length} bytes does not fit in one log entry (${ENVELOPE_MAX_BYTES} bytes at most in a cluster)`,
        );
      const writing = this.#writing.get(b.id);
      if (writing) {
        waits.push(writing);
        continue;
      }
      if (this.#pendingAt.has(b.id)) continue;
      const p = this.#pack(b);
      this.#writing.set(b.id, p);
      void p.then(
        () => this.#writing.delete(b.id),
        () => this.#writing.delete(b.id),
      );
      waits.push(p);
    }
    await Promise.all(waits);
  }

  #pack(b: { id: string; bytes: Uint8Array }): Promise<void> {
    let p = this.#packing;
    if (p && (p.batches.length >= ENVELOPE_MAX_BATCHES || p.bytes + b.bytes.length + 4 > ENVELOPE_MAX_BYTES)) {
      this.#close(p);
      p = null;
    }
    if (!p) {
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      done.catch(() => undefined);
      const fresh: Packing = { batches: [], bytes: 0, done, resolve, reject, timer: null, due: false };
      const now = Date.now();
      const wait = this.#lastAppendAt + this.#spacing * this.#appenders(now) - now;
      if (wait <= 0) fresh.due = true;
      else
        fresh.timer = setTimeout(() => {
          fresh.timer = null;
          fresh.due = true;
          this.#send();
        }, wait);
      this.#packing = p = fresh;
    }
    p.batches.push(b);
    p.bytes += b.bytes.length + 4;
    // Due at once: it goes after this turn, with the other batches of the same request.
    if (p.due && p.batches.length === 1) queueMicrotask(() => this.#send());
    return p.done;
  }

  /** The envelope takes no more batches: it waits for an append slot. */
  #close(p: Packing): void {
    if (p.timer) clearTimeout(p.timer);
    p.timer = null;
    if (this.#packing === p) this.#packing = null;
    this.#waiting.push(p);
    this.#send();
  }

  /** Starts appends while slots are free: closed envelopes first, then the open one once it is due. */
  #send(force = false): void {
    for (;;) {
      if (!force && this.#busySlots() >= MAX_APPENDS) return;
      let p = this.#waiting.shift();
      if (!p && this.#packing && (this.#packing.due || force)) {
        p = this.#packing;
        this.#packing = null;
        if (p.timer) clearTimeout(p.timer);
      }
      if (!p) return;
      this.#append(p);
    }
  }

  /** Appends holding a slot: those younger than SLOW_APPEND_MS (a check is set for when the oldest ages). */
  #busySlots(): number {
    const now = Date.now();
    let busy = 0;
    let oldest = Number.POSITIVE_INFINITY;
    for (const at of this.#appends.values()) {
      if (now - at >= SLOW_APPEND_MS) continue;
      busy++;
      oldest = Math.min(oldest, at);
    }
    if (busy >= MAX_APPENDS && !this.#slowCheck && (this.#packing || this.#waiting.length > 0)) {
      this.#slowCheck = setTimeout(
        () => {
          this.#slowCheck = null;
          this.#send();
        },
        oldest + SLOW_APPEND_MS - now,
      );
    }
    return busy;
  }

  /** How many members appended within APPENDERS_WINDOW_MS, this one included. */
  #appenders(now: number): number {
    let n = 1;
    for (const [signer, at] of this.#appendedAt) {
      if (now - at > APPENDERS_WINDOW_MS) this.#appendedAt.delete(signer);
      else if (signer !== this.#o.signer.publicKey) n++;
    }
    return n;
  }

  #append(p: Packing): void {
    const now = Date.now();
    this.#lastAppendAt = now;
    // The block open here for CLOSE_AGE_MS ends with this envelope, if it is still open where
    // the envelope lands in the log (else the mark is stale and changes nothing).
    const open = this.#open;
    const closing = open && !open.closeSent && now - open.openedAt >= CLOSE_AGE_MS ? open : null;
    if (closing) closing.closeSent = true;
    const value = encodeEnvelope(
      this.#o.signer,
      now,
      p.batches.map((b) => b.bytes),
      closing?.first ?? 0,
    );
    const key = `${this.#keyPrefix}${(this.#seq++).toString(16).padStart(8, '0')}`;
    const { client } = this.#o;
    // Only while this member is not removed: a removal commits before this write or after it,
    // never across it, so no batch is acknowledged in an envelope the members would refuse.
    const put: Promise<void> = client
      .if(`${REMOVED}${this.#o.signer.publicKey}`, 'Create', '==', 0)
      .then(client.put(key).value(value))
      .commit()
      .then(
        (res) => {
          if (!res.succeeded) {
            p.reject(new LedgerUnavailable(REMOVED_MESSAGE));
            return;
          }
          const rev = Number(res.header.revision);
          this.#track(
            rev,
            p.batches.map((b) => b.id),
          );
          p.resolve();
        },
        (err: unknown) => {
          // Not in the log: the block's cut is up to its timers again.
          if (closing) closing.closeSent = false;
          p.reject(new LedgerUnavailable(`the cluster's log (etcd) did not take the batches: ${etcdReason(err)}`));
        },
      )
      .finally(() => {
        this.#appends.delete(put);
        this.#send();
      });
    this.#appends.set(put, Date.now());
  }

  /** Batches known to be in the log at `rev`: pending until this member applies it. */
  #track(rev: number, ids: string[]): void {
    if (rev <= this.#applied) return;
    const list = this.#byRev.get(rev);
    if (list) list.push(...ids);
    else this.#byRev.set(rev, [...ids]);
    for (const id of ids) this.#pendingAt.set(id, rev);
  }

  /**
   * The committer applied the log up to `rev`: a round, durable (its transaction records the
   * revision), or entries that added nothing (applied as they are: a member that restarts
   * reads them again).
   */
  applied(rev: number, durable: boolean): void {
    if (durable && rev > this.#durable) this.#durable = rev;
    if (rev <= this.#applied) return;
    for (const [r, ids] of this.#byRev) {
      if (r > rev) continue;
      for (const id of ids) if (this.#pendingAt.get(id) === r) this.#pendingAt.delete(id);
      this.#byRev.delete(r);
    }
    this.#forwarded = this.#forwarded.filter((r) => r > rev);
    this.#applied = rev;
    this.#releaseWaits(false);
    this.#pump();
  }

  /**
   * Reads the log from #readNext with one watch: etcd replays its history from there, then
   * goes on with new entries. Every member thus reads the same sequence of entries, the
   * same as when it follows live: revision order, and within a revision (a transaction of
   * several puts, which only a writer other than a member makes) the transaction's order.
   * A range read would not: it gives only the newest value of a key that was written again
   * (or none of a key deleted since), and leaves the order of entries of one revision open.
   * A history that etcd compacted past #readNext cannot be replayed: this member then
   * catches up from a member's blocks, as when its position was deleted.
   */
  async #follow(gen: number): Promise<void> {
    const { client } = this.#o;
    while (!this.#closed && gen === this.#generation) {
      try {
        // Paused (read too far ahead): on again once half of what was read is applied.
        while ((this.#backlog.length > this.#aheadBlocks / 2 || this.#taking > this.#aheadEntries / 2) && !this.#closed && gen === this.#generation)
          await new Promise((r) => setTimeout(r, READ_AHEAD_POLL_MS));
        if (this.#closed || gen !== this.#generation) return;
        await this.#loadMembers();
        const fr = await client.get(FLOOR).exec();
        const floor = Number(fr.kvs[0]?.value.toString() ?? '0');
        // Entries this member has not applied were deleted: it takes the blocks from a member first.
        if (this.#readNext <= floor) {
          if (!(await this.#rewind(gen))) return;
          if (!(await this.#catchingUpWhile(() => this.#catchUp(gen, 'deleted')))) continue;
        }
        if (gen !== this.#generation) return;
        if (this.#readNext <= Number(fr.header.revision) && (await this.#compacted(this.#readNext))) {
          if (!(await this.#rewind(gen))) return;
          await this.#catchingUpWhile(async () => {
            const from = this.#readNext;
            // No member is past the compaction yet: wait for one.
            if ((await this.#catchUp(gen, 'compacted')) && this.#readNext === from) await new Promise((r) => setTimeout(r, RETRY_MS));
            return true;
          });
          continue;
        }
        if (this.#closed || gen !== this.#generation) return;
        // Its handlers are on before etcd can answer: a response that comes in the same read
        // as the watch's creation is not missed (create() resolves a turn after 'connected').
        const w = client
          .watch()
          .prefix(LOG)
          // The log's deletes (retention) are of no interest here: etcd leaves them out.
          .only('put')
          .startRevision(String(this.#readNext))
          .watcher();
        this.#watcher = w;
        // The etcd client resumes a watch whose stream broke from the revision of its last
        // response's header, which during a replay is etcd's newest revision, not the last
        // entry sent: what came between would be skipped. A broken watch is therefore
        // dropped (nothing more is taken from it) and the log read again from #readNext. So
        // is the watch of a follower that started again (the stall guard, a recovery): its
        // stream may still carry entries, and taking one would move the new watch's
        // position past entries it has not taken yet.
        let live = true;
        let connected = false;
        const deliver = (kv: IKeyValue): void => {
          if (!live || gen !== this.#generation) return;
          this.#take(kv, gen);
        };
        w.on('put', (kv) => {
          // The deafWatchAfter test hook: a stream that stalls. What it carries is held back
          // and delivered once the follower has started again (the stream resumes just then).
          if (this.#deafIn <= 0) {
            this.#held.push(() => deliver(kv));
            return;
          }
          this.#deafIn--;
          deliver(kv);
        });
        // An 'error' after this watch was dropped has nobody to hear it: it must not throw.
        w.on('error', () => undefined);
        w.once('connected', () => {
          connected = true;
          this.#unreadable.ok();
        });
        let stop: (why: string | null) => void = () => undefined;
        const ended = new Promise<void>((resolve) => {
          stop = (why) => {
            if (!live) return;
            live = false;
            // A watch etcd never confirmed is one more try of an outage; one that broke, an event of its own.
            if (why !== null && !connected) this.#unreadable.fail(`its watch ${why}`);
            else if (why !== null) log.warn(`cluster log watch ${why}; reading the log again from revision ${this.#readNext}`);
            resolve();
          };
        });
        const end = (): void => stop(null);
        this.#endWatch = end;
        w.once('error', (err) => stop(`failed (${etcdReason(err)})`));
        w.once('disconnected', (err) => stop(`lost its stream (${etcdReason(err)})`));
        w.once('end', () => stop(null));
        await ended;
        // This watch's handle only: a follower started since has its own.
        if (this.#endWatch === end) this.#endWatch = null;
        if (this.#watcher === w) this.#watcher = null;
        this.#deafIn = Number.POSITIVE_INFINITY;
        await w.cancel().catch(() => undefined);
        // Ended before etcd confirmed it (refused, or its stream broke): a pause before the next.
        if (!connected && !this.#closed && gen === this.#generation) await new Promise((r) => setTimeout(r, RETRY_MS));
      } catch (err) {
        if (this.#closed || gen !== this.#generation) return;
        this.#unreadable.fail(etcdReason(err));
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  /** Runs a catch-up (the stall guard looks away meanwhile: its fetches take their time). */
  async #catchingUpWhile(run: () => Promise<boolean>): Promise<boolean> {
    this.#catchingUp = true;
    try {
      return await run();
    } finally {
      this.#catchingUp = false;
    }
  }

  /**
   * Before a catch-up from the members' blocks: the entries already taken are checked and
   * the blocks they closed applied; the block still open is dropped and #readNext moved back
   * to its first entry (the catch-up's blocks hold what it held, or the log is read again
   * from there). The committer then gets only revisions past its own, in order. False when
   * the link restarted meanwhile.
   */
  async #rewind(gen: number): Promise<boolean> {
    await this.#order;
    if (gen !== this.#generation) return false;
    const last = this.#backlog.at(-1)?.rev ?? this.#forwarded.at(-1) ?? this.#applied;
    await this.#appliedTo(last);
    if (gen !== this.#generation || this.#closed) return false;
    this.#dropOpen();
    if (this.#readNext > this.#applied + 1) {
      this.#readNext = this.#applied + 1;
      this.#lastKey = Buffer.alloc(0);
    }
    return true;
  }

  /** etcd's history before `rev` was compacted (a watch from `rev` cannot replay it). */
  async #compacted(rev: number): Promise<boolean> {
    try {
      await this.#o.client.kv.range({ key: Buffer.from(FLOOR), revision: String(rev), count_only: true });
      return false;
    } catch (err) {
      if (/compacted/.test(etcdReason(err))) return true;
      throw err;
    }
  }

  /**
   * Catches up from the other members' chains: fetches the blocks after this member's head,
   * checks each (the chain key's signature, the parent, the log revision it names) and has
   * the committer execute them; each must come out as the same block. Returns once a member
   * has no more blocks (then the log is read from the last revision applied); false when
   * no member answered (tried again).
   */
  async #catchUp(gen: number, why: 'deleted' | 'compacted'): Promise<boolean> {
    // Said once per position: a compaction past every member's position is retried until one passes it.
    const said = `${why} ${this.#readNext}`;
    const again = said === this.#catchUpSaid;
    if (!again)
      log.info(
        why === 'deleted'
          ? `the cluster's log before revision ${this.#readNext} was deleted: catching up from a member's blocks`
          : `etcd's history before revision ${this.#readNext} was compacted: catching up from a member's blocks`,
      );
    this.#catchUpSaid = said;
    for (;;) {
      if (gen !== this.#generation || this.#closed) return false;
      const tip = this.#o.head();
      const blocks = await this.#fetchBlocks(tip);
      if (blocks === null) {
        log.warn('no member answered with its blocks; trying again');
        await new Promise((r) => setTimeout(r, RETRY_MS));
        return false;
      }
      if (blocks.length === 0) {
        if (!again) log.info(`caught up from the members' blocks at block ${tip.blockNum}; following the log from revision ${this.#readNext}`);
        return true;
      }
      const last = blocks[blocks.length - 1] as FetchedBlock;
      const now = Date.now();
      this.#backlog.push(...blocks.map((b) => ({ rev: b.rev, ts: now, batches: b.batches })));
      for (const b of blocks)
        this.#track(
          b.rev,
          b.batches.map((x) => x.id),
        );
      this.#pump();
      await this.#appliedTo(last.rev);
      if (gen !== this.#generation) return false;
      this.#readNext = last.rev + 1;
      const head = this.#o.head();
      if (head.blockId !== last.id) {
        this.#o.diverged(
          `block ${last.num} fetched from a member is ${last.id.slice(0, 16)}…, this member made ${head.blockId.slice(0, 16)}… of it (block ${head.blockNum})`,
        );
        return false;
      }
    }
  }

  /**
   * Resolves once this member has read every log entry etcd holds now (or after
   * `timeoutMs`, or at once when etcd does not answer): a status read after it is as
   * fresh as the log.
   */
  async readThrough(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    // etcd away: the read in flight (and the next one) may take up to their deadlines; the
    // wait keeps its own time. A read that failed is asked again while the wait lasts: just
    // after etcd is back, this member's client may still hold its members paused, and a
    // batch another member has acknowledged must not read UNKNOWN for that.
    let timer: NodeJS.Timeout | undefined;
    const timeUp = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), timeoutMs);
    });
    let target: number | null = null;
    while (target === null && !this.#closed && Date.now() < until) {
      target = await Promise.race([this.#tip.get(), timeUp]);
      if (target === null) await Promise.race([new Promise((resolve) => setTimeout(resolve, TIP_RETRY_MS)), timeUp]);
    }
    clearTimeout(timer);
    if (target !== null && this.#readNext <= target && !this.#closed)
      await new Promise<void>((resolve) => {
        const w = {
          target,
          resolve,
          timer: setTimeout(
            () => {
              this.#readWaits.delete(w);
              resolve();
            },
            Math.max(0, until - Date.now()),
          ),
        };
        this.#readWaits.add(w);
      });
    // Read, then taken in order (checked, verified) behind what came before it.
    await this.#order;
  }

  /**
   * The revision of the newest log entry etcd holds from #readNext on (0: none), or null when
   * etcd does not answer. Status waits share these reads (#tip): a flood of waits for unknown
   * ids costs etcd one read in flight from each member, not one each.
   */
  async #readTip(): Promise<number | null> {
    try {
      const res = await this.#o.client.getAll().prefix(LOG).minModRevision(String(this.#readNext)).sort('Mod', 'Descend').limit(1).exec();
      return Number(res.kvs[0]?.mod_revision ?? 0);
    } catch {
      return null;
    }
  }

  /** Resolves the readThrough waits that the log read so far satisfies (all of them: `all`). */
  #releaseReads(all: boolean): void {
    for (const w of this.#readWaits) {
      if (!all && this.#readNext <= w.target) continue;
      this.#readWaits.delete(w);
      clearTimeout(w.timer);
      w.resolve();
    }
  }

  /** Resolves once the committer applied `rev` (or the link restarted). */
  #appliedTo(rev: number): Promise<void> {
    if (this.#applied >= rev || this.#closed) return Promise.resolve();
    return new Promise((resolve) => this.#appliedWaits.push({ rev, resolve }));
  }

  /** Resolves the waits for revisions applied now (all of them when the link restarts or closes). */
  #releaseWaits(all: boolean): void {
    const left: Array<{ rev: number; resolve: () => void }> = [];
    for (const w of this.#appliedWaits) {
      if (all || w.rev <= this.#applied) w.resolve();
      else left.push(w);
    }
    this.#appliedWaits = left;
  }

  /** The blocks after `tip` from the first member that answers, checked; null if none answered. */
  async #fetchBlocks(tip: ChainHead): Promise<FetchedBlock[] | null> {
    for (const url of this.#o.peers()) {
      let body: Buffer;
      try {
        const r = await fetch(`${url}/cluster/blocks?from=${tip.blockNum + 1}&limit=${CATCH_UP_PAGE}`, {
          signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
        });
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        body = Buffer.from(await r.arrayBuffer());
      } catch (err) {
        log.warn(`blocks from ${url} not fetched: ${etcdReason(err)}`);
        continue;
      }
      try {
        return this.#checkBlocks(body, tip);
      } catch (err) {
        log.warn(`blocks from ${url} refused: ${(err as Error).message}`);
      }
    }
    return null;
  }

  #checkBlocks(body: Buffer, tip: ChainHead): FetchedBlock[] {
    const out: FetchedBlock[] = [];
    let prev = tip.blockId;
    let num = tip.blockNum;
    for (let o = 0; o < body.length; ) {
      if (o + 4 > body.length) throw new Error('truncated reply');
      const len = body.readUInt32BE(o);
      if (o + 4 + len > body.length) throw new Error('truncated reply');
      const bytes = body.subarray(o + 4, o + 4 + len);
      o += 4 + len;
      const fields = delimitedFields(bytes);
      const header = fields?.find((f) => f.field === 1)?.bytes;
      const sig = fields?.find((f) => f.field === 2)?.bytes;
      if (!fields || !header || !sig) throw new Error(`block ${num + 1} is not a Block`);
      const id = Buffer.from(sig).toString('latin1');
      const h = decode(BlockHeader, header);
      num++;
      if (h.signerPublicKey !== this.#o.chainKey || !verify(id, header, this.#o.chainKey))
        throw new Error(`block ${num} is not signed by the chain key`);
      if (Number(h.blockNum) !== num || h.previousBlockId !== prev) throw new Error(`block ${num} does not follow block ${num - 1}`);
      const rev = consensusRevision(h.consensus);
      if (rev === null) throw new Error(`block ${num} names no log revision`);
      const batches: Array<{ id: string; bytes: Uint8Array }> = [];
      for (const f of fields) {
        if (f.field !== 3) continue;
        const bid = batchIdOf(f.bytes);
        if (bid === null) throw new Error(`block ${num} holds a batch without an id`);
        batches.push({ id: bid, bytes: f.bytes });
      }
      if (batches.map((b) => b.id).join() !== h.batchIds.join()) throw new Error(`block ${num}'s batches are not its header's`);
      out.push({ num, id, rev, batches });
      prev = id;
    }
    return out;
  }

  /** One log entry, in revision order: checked, then queued for the committer. */
  #take(kv: IKeyValue, gen: number): void {
    const rev = Number(kv.mod_revision);
    if (rev < this.#readNext) {
      // One revision, one entry: the first of a transaction's puts (the same one on every
      // member, since all read etcd's history in its order); the others are passed over.
      if (rev === this.#readNext - 1 && !kv.key.equals(this.#lastKey))
        log.warn(
          `cluster log entry ${kv.key.toString()} shares revision ${rev} with ${this.#lastKey.toString()}: passed over (one entry a revision)`,
        );
      return;
    }
    this.#readNext = rev + 1;
    this.#lastKey = kv.key;
    if (this.#readWaits.size > 0) this.#releaseReads(false);
    const value = kv.value;
    this.#taking++;
    if ((this.#taking > this.#aheadEntries || this.#backlog.length > this.#aheadBlocks) && this.#endWatch) {
      log.info(
        `the cluster log is read ${this.#backlog.length} blocks and ${this.#taking} entries ahead of the committer: reading pauses at revision ${this.#readNext}`,
      );
      this.#endWatch();
    }
    this.#order = this.#order
      .then(() => {
        // Out of the queue: checked now (one at a time, in order); a restart dropped the rest.
        if (gen !== this.#generation) return;
        this.#taking--;
        return this.#check(kv, rev, value, gen);
      })
      .catch((err: unknown) => {
        // The entries after it cannot be taken without it: the follower starts again.
        if (gen === this.#generation && !this.#closed) this.#restart(`could not check the log entry at revision ${rev} (${etcdReason(err)})`);
      });
  }

  /** One log entry taken, in order: checked, then added to the open block (or passed over). */
  async #check(kv: IKeyValue, rev: number, value: Buffer, gen: number): Promise<void> {
    if (gen !== this.#generation) return;
    const signer = value.length >= 37 ? value.toString('hex', 4, 37) : '';
    if (signer && !this.#isMember(signer, rev)) {
      await this.#loadMembers().catch(() => undefined);
      if (gen !== this.#generation) return;
    }
    const known = (s: string): boolean => this.#isMember(s, rev);
    const refuse = (err: unknown): void => {
      const why = err instanceof EnvelopeError ? err.message : String(err);
      log.warn(`cluster log entry at revision ${rev} (${kv.key.toString()}) refused: ${why}`);
      // Passed over on every member alike: the position moves past it.
      this.#passOver(rev);
    };
    if (isRemoval(value)) {
      try {
        this.#noteRemoval(decodeRemoval(value, this.#o.chainKey), rev);
      } catch (err) {
        refuse(err);
        return;
      }
      this.#passOver(rev);
      return;
    }
    if (isCut(value)) {
      let target: number;
      try {
        target = decodeCut(value, known).target;
      } catch (err) {
        refuse(err);
        return;
      }
      // The first cut of the open block closes it; a later one (another member's) is stale.
      if (this.#open?.first === target) this.#closeBlock(rev);
      else this.#passOver(rev);
      return;
    }
    let env: LogEnvelope & { signer: string };
    let closes: number;
    try {
      const e = decodeEnvelope(value, known);
      env = { rev, ts: e.ts, batches: e.batches, signer: e.signer };
      closes = e.closes;
    } catch (err) {
      refuse(err);
      return;
    }
    this.#appendedAt.set(env.signer, Date.now());
    if (this.#o.verify && env.batches.length > 0) {
      env = { ...(await this.#verified(env, kv.key.toString())), signer: env.signer };
      if (gen !== this.#generation) return;
    }
    if (env.batches.length === 0) {
      // Nothing to add, but its mark still closes the block it names (as a cut would).
      if (closes > 0 && this.#open?.first === closes) this.#closeBlock(rev);
      else this.#passOver(rev);
      return;
    }
    this.#track(
      rev,
      env.batches.map((b) => b.id),
    );
    let open = this.#open;
    if (!open) {
      open = {
        first: rev,
        ts: env.ts,
        batches: [],
        bytes: 0,
        timer: null,
        mine: env.signer === this.#o.signer.publicKey,
        openedAt: Date.now(),
        cutSent: false,
        closeSent: false,
      };
      this.#open = open;
      if (!open.mine) this.#scheduleCut(open, CUT_TAKEOVER_MS, gen);
    }
    // The opener's linger: a quiet spell, or the longest a block stays open.
    if (open.mine && !open.cutSent) {
      if (open.timer) clearTimeout(open.timer);
      const now = Date.now();
      this.#scheduleCut(open, Math.max(0, Math.min(open.openedAt + CUT_MAX_MS, now + CUT_QUIET_MS) - now), gen);
    }
    for (const b of env.batches) {
      open.batches.push(b);
      open.bytes += b.bytes.length;
    }
    // The block ends here: at its bound, or at an envelope that closes it (the first revision it names).
    if (open.batches.length >= BLOCK_MAX_BATCHES || open.bytes >= BLOCK_MAX_BYTES || closes === open.first) this.#closeBlock(rev);
  }

  /** An entry that adds nothing: part of the open block, or applied on its own (the position moves). */
  #passOver(rev: number): void {
    if (this.#open) return;
    this.#backlog.push({ rev, ts: 0, batches: [] });
    this.#pump();
  }

  /** The open block ends at `rev` (a cut, or the size bound): it goes to the committer as one round. */
  #closeBlock(rev: number): void {
    const o = this.#open;
    if (!o) return;
    this.#open = null;
    if (o.timer) clearTimeout(o.timer);
    this.#backlog.push({ rev, ts: o.ts, batches: o.batches });
    this.#pump();
  }

  /**
   * Appends a cut of the open block after `delay` if it is still open: soon by the member
   * whose envelope opened it, later by any other (that member may be gone). Cuts of the
   * same block by several members are harmless: the first closes it, the rest are stale.
   */
  #scheduleCut(o: OpenBlock, delay: number, gen: number): void {
    o.timer = setTimeout(() => {
      o.timer = null;
      if (this.#open !== o || gen !== this.#generation || this.#closed) return;
      // This member's envelope that closes it is on its way: the cut only if that one fails.
      if (o.closeSent) {
        this.#scheduleCut(o, CUT_TAKEOVER_MS, gen);
        return;
      }
      o.cutSent = true;
      this.#o.client
        .put(`${LOG}${this.#o.signer.publicKey}/cut-${o.first}`)
        .value(encodeCut(this.#o.signer, o.first))
        .exec()
        .then(
          () => undefined,
          (err: unknown) => log.debug(`cut of the block at revision ${o.first} not appended: ${etcdReason(err)}`),
        );
      // Again later, should this one not reach the log.
      this.#scheduleCut(o, CUT_TAKEOVER_MS, gen);
    }, delay);
  }

  /**
   * The envelope less the batches that fail this member's own checks (signatures, structure,
   * families): every member that re-verifies drops the same ones. A member whose checks
   * cannot run (the pool failed) stops reading here and tries again.
   */
  async #verified(env: LogEnvelope, key: string): Promise<LogEnvelope> {
    const verify = this.#o.verify;
    if (!verify) return env;
    const results = await verify(env.batches.map((b) => batchListOf(b.bytes)));
    const kept = env.batches.filter((b, i) => {
      const r = results[i];
      const ok = r?.ok === true && r.batches.length === 1 && r.batches[0]?.id === b.id;
      if (!ok)
        log.warn(
          `batch ${b.id.slice(0, 16)}… of log entry ${key} (revision ${env.rev}) fails this member's checks: ${r && !r.ok ? r.message : 'id mismatch'}; dropped`,
        );
      return ok;
    });
    return kept.length === env.batches.length ? env : { ...env, batches: kept };
  }

  /**
   * A member may append at `rev` if it registered before it (registrations are never deleted)
   * and was not removed before it (`cairn cluster remove`).
   */
  #isMember(signer: string, rev: number): boolean {
    const at = this.#members.get(signer);
    const out = this.#removed.get(signer);
    return at !== undefined && at < rev && (out === undefined || rev < out);
  }

  /** The members taken out of the cluster, and the log revision of each removal. */
  get removed(): ReadonlyMap<string, number> {
    return this.#removed;
  }

  /** This member's key was taken out of the cluster (at that log revision), or null. */
  get removedAt(): number | null {
    return this.#removed.get(this.#o.signer.publicKey) ?? null;
  }

  async #loadMembers(): Promise<void> {
    const [res, out] = await Promise.all([this.#o.client.getAll().prefix(NODES).exec(), this.#o.client.getAll().prefix(REMOVED).exec()]);
    const m = new Map<string, number>();
    for (const kv of res.kvs) m.set(kv.key.toString().slice(NODES.length), Number(kv.create_revision));
    this.#members = m;
    for (const kv of out.kvs) {
      const key = kv.key.toString().slice(REMOVED.length);
      if (isRemovalOf(kv.value, key, this.#o.chainKey)) this.#noteRemoval(key, Number(kv.create_revision));
      else log.warn(`removal record ${kv.key.toString()} refused: not a removal of that key signed by the chain key`);
    }
  }

  /** A member's removal at log revision `rev` (from its log entry or its record: the same revision). */
  #noteRemoval(key: string, rev: number): void {
    const known = this.#removed.get(key);
    if (known !== undefined && known <= rev) return;
    this.#removed.set(key, rev);
    if (key === this.#o.signer.publicKey)
      log.error(`this node was removed from the cluster at log revision ${rev} (cairn cluster remove): it acknowledges no batch from now on`);
    else log.info(`member ${key.slice(0, 16)}… was removed from the cluster at log revision ${rev}`);
  }

  /** Hands envelopes to the committer while fewer than MAX_FORWARDED are unapplied. */
  #pump(): void {
    if (this.#backlog.length === 0 || this.#forwarded.length >= MAX_FORWARDED) return;
    const n = Math.min(this.#backlog.length, MAX_FORWARDED - this.#forwarded.length);
    const envelopes = this.#backlog.splice(0, n);
    for (const e of envelopes) this.#forwarded.push(e.rev);
    this.#o.tell({ type: 'log', envelopes });
  }

  /** Appends in progress settle (a recovery restarts the committer after them). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#appends.keys()]);
  }

  /** A new committer took over at `nextRev`: the log is read again from there. */
  reset(_pendingIds: readonly string[], nextRev: number): void {
    this.#applied = nextRev - 1;
    this.#durable = nextRev - 1;
    this.#readAgainFrom(nextRev);
    this.#releaseWaits(true);
  }

  /** etcd answers a read (a recovery's check that acknowledgements may resume). */
  async probe(): Promise<void> {
    await this.#o.client.get(CHAIN_KEY).string();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#releaseWaits(true);
    this.#releaseReads(true);
    this.#generation++;
    if (this.#slowCheck) clearTimeout(this.#slowCheck);
    if (this.#guard) clearInterval(this.#guard);
    if (this.#open?.timer) clearTimeout(this.#open.timer);
    this.#send(true);
    await this.drain();
    this.#endWatch?.();
    await this.#watcher?.cancel().catch(() => undefined);
    this.#watcher = null;
  }
}
