/**
 * A cluster member's batch source (committer thread): the blocks of the cluster's log in
 * etcd, in log order, as the HTTP thread cuts them (src/cluster/block-cutter.ts: by a rule of the
 * log alone, so every member cuts the same blocks). One block is one round: its batches in
 * log order less those committed or in a round in flight already (duplicates across
 * envelopes, resubmissions), executed with no dependency wait (a batch whose dependency is
 * not committed is invalid at once, on every member alike). A block left with no batch
 * makes no round. Each round's transaction records the log revision that ended it
 * (LOG_REV_KEY): a restart follows the log from there.
 */
import type { LedgerStores } from '../store/ledger-stores.js';
import { isCount, MetaRecord } from '../store/meta-record.js';
import type { IdIndex } from '../store/id-index.js';
import type { BuildEntry, BuiltBlock } from '../ledger/block-builder.js';
import type { FromCommitter } from '../ledger/protocol.js';
import type { BatchSource, RoundPlan, RoundTag, RoundWrites, SourceFigures } from '../ledger/source.js';
import { RollingAverage } from '../ledger/batch-pool.js';
import type { LogEnvelope } from './protocol.js';

/** Meta key of the last log revision whose round is durable. */
export const LOG_REV_KEY = 'cluster_log_rev';
const LOG_REV = new MetaRecord<number>(LOG_REV_KEY, isCount);

export interface LogSourceOptions {
  stores: LedgerStores;
  ids: IdIndex;
  queueMultiplier: number;
  queueInitialAverage: number;
  post(m: FromCommitter): void;
  /** Test hook: drop the last batch of every round (a member whose state diverges). */
  diverge?: boolean;
}

/** A log round's tag (every plan of this source has one). */
function tagOf(plan: RoundPlan<BuildEntry>): RoundTag {
  if (!plan.round) throw new Error('a log round without its revision');
  return plan.round;
}

export class LogSource implements BatchSource<BuildEntry> {
  readonly #o: LogSourceOptions;
  /** Envelopes received and not yet in an accepted round, in log order. */
  readonly #queue: LogEnvelope[] = [];
  #queuedBatches = 0;
  /** Revision of the last envelope queued (later copies of it are ignored). */
  #lastQueued = 0;
  /** Last revision durable here (LOG_REV_KEY). */
  #applied = 0;
  /** Rounds accepted, not yet durable. */
  #inFlight = 0;
  /** Envelopes passed over (nothing new) while rounds were in flight: reported once those are durable. */
  #skippedTo = 0;
  /** Revision of the round being built (the consensus field names it). */
  #building = 0;
  readonly #average: RollingAverage;
  #wake: () => void = () => undefined;

  constructor(o: LogSourceOptions) {
    this.#o = o;
    this.#average = new RollingAverage(o.queueInitialAverage);
  }

  attach(wake: () => void): void {
    this.#wake = wake;
  }

  async recover(): Promise<void> {
    this.#applied = LOG_REV.get(this.#o.stores.meta) ?? 0;
    this.#lastQueued = this.#applied;
  }

  /** The next log revision this member needs. */
  get nextRev(): number {
    return this.#applied + 1;
  }

  /** The revision of the round being built. */
  get building(): number {
    return this.#building;
  }

  /** Envelopes read from the log, in order (revisions already queued are ignored). */
  add(envelopes: readonly LogEnvelope[]): void {
    for (const e of envelopes) {
      if (e.rev <= this.#lastQueued) continue;
      this.#lastQueued = e.rev;
      this.#queue.push(e);
      this.#queuedBatches += e.batches.length;
    }
    this.#wake();
  }

  get length(): number {
    return this.#queuedBatches;
  }

  next(_tip: unknown, inFlight: ReadonlySet<string>): RoundPlan<BuildEntry> | null {
    const { ids } = this.#o;
    for (let e = this.#queue[0]; e !== undefined; e = this.#queue[0]) {
      const seen = new Set<string>();
      const entries: BuildEntry[] = [];
      for (const b of e.batches) {
        if (seen.has(b.id) || inFlight.has(b.id) || ids.hasBatch(b.id)) continue;
        seen.add(b.id);
        entries.push({ id: b.id, bytes: b.bytes, seq: e.rev, acceptedAt: 0 });
      }
      if (this.#o.diverge && entries.length > 1) entries.pop();
      if (entries.length === 0) {
        this.#shift();
        this.#passedOver(e);
        continue;
      }
      this.#building = e.rev;
      return { entries, max: Infinity, dependencyWaitMs: 0, round: { id: String(e.rev), height: e.rev, ts: e.ts } };
    }
    return null;
  }

  #shift(): void {
    const e = this.#queue.shift();
    if (e) this.#queuedBatches -= e.batches.length;
  }

  /** An envelope with nothing new: applied as it is, reported once the rounds before it are durable. */
  #passedOver(e: LogEnvelope): void {
    if (this.#inFlight > 0) {
      this.#skippedTo = e.rev;
      return;
    }
    this.#report(e.rev, e.ts);
  }

  #report(rev: number, ts: number): void {
    const f = this.figures();
    this.#o.post({ type: 'block', head: null, committed: [], invalid: [], ...f, round: { id: String(rev), height: rev, ts } });
  }

  accepted(_built: BuiltBlock<BuildEntry>, plan: RoundPlan<BuildEntry>): void {
    if (this.#queue[0]?.rev === plan.round?.height) this.#shift();
    this.#inFlight++;
  }

  rejected(): void {}

  writes(_built: BuiltBlock<BuildEntry>, plan: RoundPlan<BuildEntry>): RoundWrites {
    const round = tagOf(plan);
    return { meta: [LOG_REV.entry(round.height)], extras: { timestampSec: Math.floor(round.ts / 1000) } };
  }

  settle(built: BuiltBlock<BuildEntry>, plan: RoundPlan<BuildEntry>, waiting: number): void {
    const round = tagOf(plan);
    this.#inFlight--;
    this.#applied = round.height;
    if (built.head) this.#average.note(built.included.length, waiting);
    if (this.#inFlight === 0 && this.#skippedTo > this.#applied) {
      // Queued after this round's own event: the HTTP thread sees the revisions in order.
      const rev = this.#skippedTo;
      queueMicrotask(() => this.#report(rev, round.ts));
    }
  }

  figures(): SourceFigures {
    return { pendingCount: this.#queuedBatches, queueLimit: this.#o.queueMultiplier * this.#average.value };
  }

  async close(): Promise<void> {}
}
