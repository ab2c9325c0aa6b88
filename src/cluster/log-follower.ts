/**
 * A cluster member's follower of the log, on the HTTP thread: it reads the log in etcd from
 * the revision the committer last applied, with one watch, and takes each entry in revision
 * order through the entry checks (entry-checks.ts) to the block cutter, which hands closed
 * blocks to the committer (handover.ts). It pauses when it reads too far ahead of the
 * committer, catches up from the members' blocks (catch-up.ts) when the log it needs is gone
 * from etcd, and starts again from what the committer applied when its watch breaks or a
 * stall guard finds it stuck. Every restart begins a new generation: whatever the old one
 * still had under way (a check, a timer, a watch's late events) changes nothing.
 */
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import { log } from '../log.js';
import { FLOOR, LOG, etcdReason } from './etcd.js';
import { Outage } from './outage.js';
import { StallGuard } from './stall-guard.js';
import type { Handover } from './handover.js';
import type { BlockCutter } from './block-cutter.js';
import type { MemberRoll } from './member-roll.js';
import type { TipReads } from './tip-reads.js';

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
export interface LogFollowerOptions {
  client: Etcd3;
  /** Next log revision to read (the committer's: the last one applied + 1). */
  nextRev: number;
  handover: Handover;
  cutter: BlockCutter;
  roll: MemberRoll;
  tips: TipReads;
  /** One entry taken, in order: checked, then handed to the block cutter (entry-checks.ts). */
  check(kv: IKeyValue, rev: number, value: Buffer, gen: number): Promise<void>;
  /** A catch-up from the members' blocks (catch-up.ts); false when no member answered. */
  catchUp(gen: number, why: 'deleted' | 'compacted'): Promise<boolean>;
  /** Null while batches may be acknowledged; else the message of the 503 (a ledger in fault is not a stalled follower). */
  refusal(): string | null;
  closed(): boolean;
  /** Test hook: the read-ahead bound in blocks (READ_AHEAD_BLOCKS; entries READ_AHEAD_ENTRIES_PER_BLOCK times it). */
  readAheadBlocks?: number;
  /**
   * Test hook: the first watch stalls after this many entries (its stream stays open); what
   * it carries after them is delivered once the follower has started again.
   */
  deafWatchAfter?: number;
}

export class LogFollower {
  readonly #o: LogFollowerOptions;
  /** The next revision to read. */
  #readNext: number;
  /** The key of the entry taken at #readNext - 1 (read as text only to name it in a warning). */
  #lastKey: Buffer = Buffer.alloc(0);
  /** The log cannot be read (etcd away): said when it starts, every 30 s while it lasts, and when it ends. */
  #unreadable = new Outage('cluster log unreadable');
  /** Entries read and waiting for their check (the #order chain). */
  #taking = 0;
  /** Ends the current watch (it read too far ahead, or the follower starts again); null while none runs. */
  #endWatch: (() => void) | null = null;
  readonly #aheadBlocks: number;
  readonly #aheadEntries: number;
  #watcher: Watcher | null = null;
  #generation = 0;
  #order: Promise<void> = Promise.resolve();
  /** Entries the current watch may still deliver (the deafWatchAfter test hook); Infinity: no limit. */
  #deafIn: number;
  /** The deafWatchAfter test hook: the entries its stalled stream holds back. */
  readonly #held: Array<() => void> = [];
  readonly #guard: StallGuard;
  /** A catch-up from the members' blocks is under way (its fetches may take a while: no stall). */
  #catchingUp = false;

  constructor(o: LogFollowerOptions) {
    this.#o = o;
    this.#readNext = o.nextRev;
    this.#aheadBlocks = o.readAheadBlocks ?? READ_AHEAD_BLOCKS;
    this.#aheadEntries = this.#aheadBlocks * READ_AHEAD_ENTRIES_PER_BLOCK;
    this.#deafIn = o.deafWatchAfter ?? Number.POSITIVE_INFINITY;
    this.#guard = new StallGuard({
      client: o.client,
      readNext: () => this.#readNext,
      applied: () => o.handover.applied,
      catchingUp: () => this.#catchingUp,
      refusal: o.refusal,
      closed: o.closed,
      restart: (why) => this.#restart(why),
    });
  }

  /** The next log revision to read. */
  get readNext(): number {
    return this.#readNext;
  }

  /** A catch-up took the log up to `rev - 1` from the members' blocks: reading goes on from `rev`. */
  moveTo(rev: number): void {
    this.#readNext = rev;
  }

  get generation(): number {
    return this.#generation;
  }

  /** The entries taken so far, checked in order: resolves once those taken before the call are. */
  get order(): Promise<void> {
    return this.#order;
  }

  /** Starts following the log. */
  start(): void {
    void this.#follow(this.#generation);
    this.#guard.start();
  }

  /** The link closes: this generation ends, and the guard with it. */
  stop(): void {
    this.#generation++;
    this.#guard.stop();
  }

  /** After stop(), once the appends settled: the watch ends. */
  async close(): Promise<void> {
    this.#endWatch?.();
    await this.#watcher?.cancel().catch(() => undefined);
    this.#watcher = null;
  }

  /**
   * The follower starts again from what the committer applied: the watch, the entries being
   * checked, the open block and the blocks not handed over are dropped, and the log read again
   * (rounds the committer holds already are not taken twice: it passes over revisions it has).
   */
  #restart(why: string): void {
    const { handover } = this.#o;
    const from = handover.applied + 1;
    const open = this.#o.cutter.openFirst;
    log.warn(
      `the cluster log follower ${why} (read to ${this.#readNext - 1}, applied ${handover.applied}, ${this.#taking} entries being checked, ` +
        `${handover.backlog.length} blocks waiting, ${handover.forwarded} with the committer${open !== null ? `, a block open since revision ${open}` : ''}): ` +
        `reading the log again from revision ${from}`,
    );
    this.readAgainFrom(from);
  }

  /**
   * A new follower from revision `from`: the current one's watch, entries being checked, open
   * block and blocks not handed over are dropped (its generation ends).
   */
  readAgainFrom(from: number): void {
    this.#generation++;
    const w = this.#watcher;
    this.#watcher = null;
    // Its loop ends now, whether or not etcd ever confirms the cancel (a stream that hangs).
    this.#endWatch?.();
    this.#endWatch = null;
    void w?.cancel().catch(() => undefined);
    this.#o.handover.clear();
    this.#o.cutter.drop();
    this.#readNext = from;
    this.#lastKey = Buffer.alloc(0);
    this.#taking = 0;
    this.#deafIn = Number.POSITIVE_INFINITY;
    this.#order = Promise.resolve();
    this.#guard.seen();
    void this.#follow(this.#generation);
    // The deafWatchAfter test hook: the stalled stream resumes now.
    for (const f of this.#held.splice(0)) f();
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
    if (this.#o.tips.waiting) this.#o.tips.release(false);
    const value = kv.value;
    this.#taking++;
    if ((this.#taking > this.#aheadEntries || this.#o.handover.backlog.length > this.#aheadBlocks) && this.#endWatch) {
      log.info(
        `the cluster log is read ${this.#o.handover.backlog.length} blocks and ${this.#taking} entries ahead of the committer: reading pauses at revision ${this.#readNext}`,
      );
      this.#endWatch();
    }
    this.#order = this.#order
      .then(() => {
        // Out of the queue: checked now (one at a time, in order); a restart dropped the rest.
        if (gen !== this.#generation) return;
        this.#taking--;
        return this.#o.check(kv, rev, value, gen);
      })
      .catch((err: unknown) => {
        // The entries after it cannot be taken without it: the follower starts again.
        if (gen === this.#generation && !this.#o.closed()) this.#restart(`could not check the log entry at revision ${rev} (${etcdReason(err)})`);
      });
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
    const { client, handover } = this.#o;
    const closed = (): boolean => this.#o.closed();
    while (!closed() && gen === this.#generation) {
      try {
        // Paused (read too far ahead): on again once half of what was read is applied.
        while ((handover.backlog.length > this.#aheadBlocks / 2 || this.#taking > this.#aheadEntries / 2) && !closed() && gen === this.#generation)
          await new Promise((r) => setTimeout(r, READ_AHEAD_POLL_MS));
        if (closed() || gen !== this.#generation) return;
        await this.#o.roll.load();
        const fr = await client.get(FLOOR).exec();
        const floor = Number(fr.kvs[0]?.value.toString() ?? '0');
        // Entries this member has not applied were deleted: it takes the blocks from a member first.
        if (this.#readNext <= floor) {
          if (!(await this.#rewind(gen))) return;
          if (!(await this.#catchingUpWhile(() => this.#o.catchUp(gen, 'deleted')))) continue;
        }
        if (gen !== this.#generation) return;
        if (this.#readNext <= Number(fr.header.revision) && (await this.#compacted(this.#readNext))) {
          if (!(await this.#rewind(gen))) return;
          await this.#catchingUpWhile(async () => {
            const from = this.#readNext;
            // No member is past the compaction yet: wait for one.
            if ((await this.#o.catchUp(gen, 'compacted')) && this.#readNext === from) await new Promise((r) => setTimeout(r, RETRY_MS));
            return true;
          });
          continue;
        }
        if (closed() || gen !== this.#generation) return;
        await this.#watch(gen);
      } catch (err) {
        if (closed() || gen !== this.#generation) return;
        this.#unreadable.fail(etcdReason(err));
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  /** One watch of the log from #readNext, until it ends (dropped, broken, or read too far ahead). */
  async #watch(gen: number): Promise<void> {
    // Its handlers are on before etcd can answer: a response that comes in the same read
    // as the watch's creation is not missed (create() resolves a turn after 'connected').
    const w = this.#o.client
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
    if (!connected && !this.#o.closed() && gen === this.#generation) await new Promise((r) => setTimeout(r, RETRY_MS));
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
    const { handover } = this.#o;
    await this.#order;
    if (gen !== this.#generation) return false;
    await handover.appliedTo(handover.last);
    if (gen !== this.#generation || this.#o.closed()) return false;
    this.#o.cutter.drop();
    if (this.#readNext > handover.applied + 1) {
      this.#readNext = handover.applied + 1;
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
}
