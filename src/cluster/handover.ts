/**
 * The link's side of the committer: blocks the block cutter closed (and entries that add
 * nothing) wait here and go to the committer in order, at most MAX_FORWARDED unapplied at
 * a time; the committer's reports of what it applied (and made durable) come back here, and
 * release the waits for a revision (a catch-up waits for the blocks it fetched).
 */
import type { ToCommitter } from '../ledger/protocol.js';
import type { LogEnvelope } from './protocol.js';

/** Envelopes handed to the committer and not applied yet, at most (the rest wait here). */
const MAX_FORWARDED = 64;

export class Handover {
  /** Blocks closed and not handed over yet, in order. */
  readonly backlog: LogEnvelope[] = [];
  /** Revisions handed to the committer and not applied yet, ascending. */
  #forwarded: number[] = [];
  /** Catch-up's waits for the committer to apply a revision. */
  #appliedWaits: Array<{ rev: number; resolve: () => void }> = [];
  #applied: number;
  /** The last revision of a durable round here: what the live record names (the retention's floor). */
  #durable: number;

  constructor(
    private readonly tell: (m: ToCommitter) => void,
    /** The link is closed: no wait is held any more. */
    private readonly closed: () => boolean,
    nextRev: number,
  ) {
    this.#applied = nextRev - 1;
    this.#durable = nextRev - 1;
  }

  /** The last log revision the committer applied. */
  get applied(): number {
    return this.#applied;
  }

  /** The last log revision durable here (a restart reads the log from the revision after it). */
  get durable(): number {
    return this.#durable;
  }

  /** Revisions with the committer, not applied yet. */
  get forwarded(): number {
    return this.#forwarded.length;
  }

  /** The last revision taken so far: waiting here, with the committer, or applied. */
  get last(): number {
    return this.backlog.at(-1)?.rev ?? this.#forwarded.at(-1) ?? this.#applied;
  }

  /** One block (or an entry that adds nothing) after those before it. */
  push(e: LogEnvelope): void {
    this.backlog.push(e);
    this.pump();
  }

  /** Hands envelopes to the committer while fewer than MAX_FORWARDED are unapplied. */
  pump(): void {
    if (this.backlog.length === 0 || this.#forwarded.length >= MAX_FORWARDED) return;
    const n = Math.min(this.backlog.length, MAX_FORWARDED - this.#forwarded.length);
    const envelopes = this.backlog.splice(0, n);
    for (const e of envelopes) this.#forwarded.push(e.rev);
    this.tell({ type: 'log', envelopes });
  }

  /** Notes a durable revision; false when `rev` was applied already (nothing more to do). */
  noteApplied(rev: number, durable: boolean): boolean {
    if (durable && rev > this.#durable) this.#durable = rev;
    return rev > this.#applied;
  }

  /** The committer applied the log up to `rev` (past the last applied): waits released, more handed over. */
  appliedUpTo(rev: number): void {
    this.#forwarded = this.#forwarded.filter((r) => r > rev);
    this.#applied = rev;
    this.releaseWaits(false);
    this.pump();
  }

  /** A new committer took over at `nextRev`. */
  reset(nextRev: number): void {
    this.#applied = nextRev - 1;
    this.#durable = nextRev - 1;
  }

  /** A new follower: the blocks not handed over and those with the old committer are forgotten. */
  clear(): void {
    this.backlog.length = 0;
    this.#forwarded = [];
  }

  /** Resolves once the committer applied `rev` (or the link restarted). */
  appliedTo(rev: number): Promise<void> {
    if (this.#applied >= rev || this.closed()) return Promise.resolve();
    return new Promise((resolve) => this.#appliedWaits.push({ rev, resolve }));
  }

  /** Resolves the waits for revisions applied now (all of them when the link restarts or closes). */
  releaseWaits(all: boolean): void {
    const left: Array<{ rev: number; resolve: () => void }> = [];
    for (const w of this.#appliedWaits) {
      if (all || w.rev <= this.#applied) w.resolve();
      else left.push(w);
    }
    this.#appliedWaits = left;
  }
}
