/**
 * A circuit's batch source, in its committer thread: the rounds the circuit agrees on. The
 * coordinator's rounds are taken from its intake (in order of acceptance, `roundMax` at
 * most); a member's are the coordinator's proposals, executed on its own tip; rounds fetched
 * from a peer (catch-up) come first. Each round's transaction also writes the statuses of
 * its batches, removes them from the intake, logs the round and its height and time.
 */
import { Batch, TransactionHeader, decode as decodePb } from '../proto/index.js';
import { log } from '../log.js';
import type { BuildEntry, BuiltBlock } from '../ledger/block-builder.js';
import type { BatchSource, RoundPlan, RoundTag, RoundWrites, SourceFigures } from '../ledger/source.js';
import type { FromCommitter } from '../ledger/protocol.js';
import type { AgreedRound, CircuitCommitterOptions, CircuitRound } from './protocol.js';
import type { ChainHead } from '../store/ledger-stores.js';
import { ROUND, hex, roundRoot, roundVerdicts, type CircuitStores, type StatusRecord } from './records.js';
import { BatchListMsg, decode, encode } from './proto.js';

const NONE = new Uint8Array(0);

/** A round waiting to be built: a proposal, a fetched round, or (coordinator) planned from the intake. */
interface Item {
  round: CircuitRound;
  expect?: { root: string; verdicts: string };
  from?: string;
}

/** The batches of an encoded BatchList as build entries; null when anything in it does not decode. */
function entriesOf(batches: Uint8Array): BuildEntry[] | null {
  try {
    const list = decode<{ batches: Buffer[] }>(BatchListMsg, batches).batches;
    return list.map((bytes) => {
      const b = decodePb(Batch, bytes);
      for (const t of b.transactions) decodePb(TransactionHeader, t.header);
      return { id: b.headerSignature, bytes, seq: 0, acceptedAt: 0 };
    });
  } catch {
    return null;
  }
}

export class AgreedRounds implements BatchSource {
  readonly #s: CircuitStores;
  readonly #o: CircuitCommitterOptions;
  readonly #post: (m: FromCommitter) => void;
  readonly #label: string;
  /** Accepted and not settled (coordinator), in order of acceptance. */
  readonly #intake = new Map<string, Uint8Array>();
  #proposals: Item[] = [];
  #catchUp: Item[] = [];
  /** Rounds built and not settled, by id. */
  readonly #rounds = new Map<string, Item>();
  /** Height and time of the last round accepted (durable or not). */
  #tipHeight = 0;
  #tipTs = 0;
  #pausedUntil = 0;
  #pauseTimer: NodeJS.Timeout | null = null;
  #wake: () => void = () => undefined;

  constructor(stores: CircuitStores, o: CircuitCommitterOptions, post: (m: FromCommitter) => void) {
    this.#s = stores;
    this.#o = o;
    this.#post = post;
    this.#label = `scabbard ${o.circuitId}::${o.serviceId}`;
  }

  /** Whether this is the coordinator's committer (its rounds come from the intake). */
  get coordinator(): boolean {
    return this.#o.coordinator;
  }

  attach(wake: () => void): void {
    this.#wake = wake;
  }

  async recover(): Promise<void> {
    const r = ROUND.get(this.#s.ledger.meta) ?? { height: 0, ts: 0 };
    this.#tipHeight = r.height;
    this.#tipTs = r.ts;
    if (!this.#o.coordinator) return;
    const loaded: Array<{ id: string; bytes: Uint8Array; seq: number }> = [];
    for (const { key, value } of this.#s.intake.getRange())
      if (!this.#s.status.doesExist(key)) loaded.push({ id: key, bytes: value.bytes, seq: value.seq });
    loaded.sort((a, b) => a.seq - b.seq);
    for (const b of loaded) this.#intake.set(b.id, b.bytes);
  }

  /** Batches accepted (durable in the intake): the coordinator rounds them. */
  add(batches: Array<{ id: string; bytes: Uint8Array }>): void {
    if (!this.#o.coordinator) return;
    for (const b of batches) if (!this.#intake.has(b.id) && !this.#s.status.doesExist(b.id)) this.#intake.set(b.id, b.bytes);
    this.#wake();
  }

  /** A proposal to execute (member). */
  propose(round: CircuitRound): void {
    this.#proposals.push({ round });
    this.#wake();
  }

  /** A proposal the agreement decided on before it was built: it is not built. */
  forget(id: string): void {
    this.#proposals = this.#proposals.filter((p) => p.round.id !== id);
  }

  /** Rounds committed elsewhere, their batches checked. */
  catchUp(from: string, rounds: AgreedRound[]): void {
    const items = [...rounds]
      .sort((a, b) => a.height - b.height)
      .map((r) => ({
        round: { id: `catch-up-${r.height}`, height: r.height, ts: r.ts, parentRoot: '', batches: r.batches },
        expect: { root: r.root, verdicts: r.verdicts },
        from,
      }));
    this.#catchUp = items;
    this.#wake();
  }

  /** A fetched round gave another root: the rest from that peer is dropped. */
  stopCatchUp(): void {
    this.#catchUp = [];
  }

  /** No round is built before `ms` from now (after a round the circuit did not agree on). */
  pause(ms: number): void {
    this.#pausedUntil = Date.now() + ms;
    if (this.#pauseTimer) clearTimeout(this.#pauseTimer);
    this.#pauseTimer = setTimeout(() => {
      this.#pauseTimer = null;
      // The pause ends with its timer, not with the wall clock: a timer may fire a little
      // before Date.now() reaches the end it was set for, and a round asked for then would
      // find the pause still on, with no timer left to ask again (the circuit stalled until
      // the next batch arrived).
      this.#pausedUntil = 0;
      this.#wake();
    }, ms);
    this.#pauseTimer.unref();
  }

  get length(): number {
    return this.#intake.size + this.#proposals.length + this.#catchUp.length;
  }

  next(tip: ChainHead, inFlight: ReadonlySet<string>): RoundPlan<BuildEntry> | null {
    while (this.#catchUp.length > 0) {
      const item = this.#catchUp[0] as Item;
      if (item.round.height <= this.#tipHeight) {
        this.#catchUp.shift();
        continue;
      }
      if (item.round.height !== this.#tipHeight + 1) {
        this.#catchUp = [];
        break;
      }
      this.#catchUp.shift();
      const entries = entriesOf(item.round.batches);
      if (!entries) {
        log.error(`${this.#label}: round ${item.round.height} from ${item.from ?? 'a peer'} does not decode; catch-up stopped`);
        this.#catchUp = [];
        break;
      }
      // Its id names the parent here, so that a round is never mistaken for another.
      item.round.parentRoot = tip.stateRoot;
      return this.#plan(item, entries);
    }
    while (this.#proposals.length > 0) {
      const item = this.#proposals.shift() as Item;
      const r = item.round;
      const entries = r.height === this.#tipHeight + 1 && r.parentRoot === tip.stateRoot ? entriesOf(r.batches) : null;
      if (entries) return this.#plan(item, entries);
      // Not executed: the agreement votes it down (and catches up when this member is behind).
      this.#post({
        ...r,
        batches: NONE,
        type: 'summary',
        follows: false,
        height: this.#tipHeight,
        root: '',
        verdicts: '',
        included: [],
        invalid: [],
      });
    }
    if (!this.#o.coordinator || Date.now() < this.#pausedUntil) return null;
    const picked: Array<[string, Uint8Array]> = [];
    for (const [id, bytes] of this.#intake) {
      if (picked.length >= this.#o.roundMax) break;
      if (!inFlight.has(id)) picked.push([id, bytes]);
    }
    if (picked.length === 0) return null;
    const height = this.#tipHeight + 1;
    const ts = Math.max(Date.now(), this.#tipTs + 1);
    const id = hex(`${height}|${tip.stateRoot}|${ts}|${picked.map(([i]) => i).join(',')}`);
    const batches = encode(BatchListMsg, { batches: picked.map(([, b]) => b) });
    const entries = picked.map(([i, bytes]) => ({ id: i, bytes, seq: 0, acceptedAt: 0 }));
    return this.#plan({ round: { id, height, ts, parentRoot: tip.stateRoot, batches } }, entries);
  }

  #plan(item: Item, entries: BuildEntry[]): RoundPlan<BuildEntry> {
    this.#rounds.set(item.round.id, item);
    const { id, height, ts } = item.round;
    const round: RoundTag = item.expect ? { id, height, ts, expect: item.expect } : { id, height, ts };
    // Deterministic on every member: a missing dependency makes the batch invalid at once.
    return { entries, max: Infinity, dependencyWaitMs: 0, round };
  }

  /** The round built for `tag`, as the agreement sees it. */
  round(tag: RoundTag): CircuitRound | undefined {
    return this.#rounds.get(tag.id)?.round;
  }

  /** Where a fetched round came from (for a log line). */
  fromOf(tag: RoundTag): string | undefined {
    return this.#rounds.get(tag.id)?.from;
  }

  accepted(_built: BuiltBlock, plan: RoundPlan<BuildEntry>): void {
    if (!plan.round) return;
    this.#tipHeight = plan.round.height;
    this.#tipTs = plan.round.ts;
  }

  rejected(_built: BuiltBlock, plan: RoundPlan<BuildEntry>): void {
    if (plan.round) this.#rounds.delete(plan.round.id);
  }

  writes(built: BuiltBlock, plan: RoundPlan<BuildEntry>): RoundWrites {
    const tag = plan.round;
    const item = tag && this.#rounds.get(tag.id);
    if (!tag || !item) throw new Error('a circuit round without its agreement');
    const { height, ts } = tag;
    const settled: Array<[string, StatusRecord]> = [];
    for (const i of built.included) settled.push([i.entry.id, { s: 'C', ts, txns: i.batch.transactions.map((t) => t.headerSignature) }]);
    for (const i of built.invalid) {
      const txns = decodePb(Batch, i.entry.bytes).transactions.map((t) => t.headerSignature);
      settled.push([i.entry.id, { s: 'I', ts, txns, invalid: i.record.invalid_transactions }]);
    }
    const record = { height, timestampMs: ts, batches: Buffer.from(item.round.batches), stateRoot: roundRoot(built), verdicts: roundVerdicts(built) };
    const s = this.#s;
    return {
      meta: [ROUND.entry({ height, ts })],
      extras: {
        timestampSec: Math.floor(ts / 1000),
        also: () => {
          for (const [id, rec] of settled) {
            s.status.put(id, rec);
            s.intake.remove(id);
          }
          s.rounds.put(height, record);
        },
      },
    };
  }

  settle(built: BuiltBlock, plan: RoundPlan<BuildEntry>): void {
    if (plan.round) this.#rounds.delete(plan.round.id);
    for (const i of built.included) this.#intake.delete(i.entry.id);
    for (const i of built.invalid) this.#intake.delete(i.entry.id);
  }

  figures(): SourceFigures {
    return { pendingCount: this.#intake.size, queueLimit: 0 };
  }

  async close(): Promise<void> {
    if (this.#pauseTimer) clearTimeout(this.#pauseTimer);
  }
}
