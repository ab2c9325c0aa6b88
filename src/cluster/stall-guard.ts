/**
 * The log follower's stall guard: when neither the follower's read position nor its applied
 * one has moved for STALL_MS while etcd holds a log entry at the read position (a watch not
 * confirmed, a stream open but silent, a check that failed, anything else that stops it),
 * the follower starts again from what its committer applied. It reads etcd only then.
 */
import type { Etcd3 } from 'etcd3';
import { LOG } from './etcd.js';

/** How long the follower may make no progress while the log holds entries for it (ms). */
const STALL_MS = 5_000;
/** How often the stall guard looks (ms). */
const STALL_LOOK_MS = 1_000;

export interface StallGuardOptions {
  client: Etcd3;
  /** The follower's next revision to read. */
  readNext(): number;
  /** The last revision the committer applied. */
  applied(): number;
  /** A catch-up from the members' blocks is under way (its fetches may take a while: no stall). */
  catchingUp(): boolean;
  /** Null while batches may be acknowledged (a ledger in fault is not a stalled follower). */
  refusal(): string | null;
  closed(): boolean;
  /** The follower starts again, for `why`. */
  restart(why: string): void;
}

export class StallGuard {
  readonly #o: StallGuardOptions;
  /** Its timer, the positions it last saw and since when, a look in progress. */
  #timer: NodeJS.Timeout | null = null;
  #seen = { readNext: 0, applied: 0, since: 0 };
  #looking = false;

  constructor(o: StallGuardOptions) {
    this.#o = o;
  }

  start(): void {
    this.seen();
    this.#timer = setInterval(() => this.#look(), STALL_LOOK_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  /** The follower's positions now are where its time without progress starts. */
  seen(): void {
    this.#seen = { readNext: this.#o.readNext(), applied: this.#o.applied(), since: Date.now() };
  }

  /**
   * The follower made no progress for STALL_MS and etcd holds an entry at its read position:
   * it starts again from its committer's position.
   */
  #look(): void {
    const o = this.#o;
    const seen = this.#seen;
    const now = Date.now();
    if (o.readNext() !== seen.readNext || o.applied() !== seen.applied || o.catchingUp()) {
      this.#seen = { readNext: o.readNext(), applied: o.applied(), since: now };
      return;
    }
    // A ledger in fault (its committer stopped; a recovery restarts it) is not a stalled follower.
    if (now - seen.since < STALL_MS || this.#looking || o.closed() || o.refusal() !== null) return;
    this.#looking = true;
    const at = o.readNext();
    o.client
      .getAll()
      .prefix(LOG)
      .minModRevision(String(at))
      .limit(1)
      .keys()
      .then(
        (keys) => {
          if (keys.length === 0 || o.closed() || o.readNext() !== seen.readNext || o.applied() !== seen.applied) return;
          o.restart(`made no progress for ${Date.now() - seen.since} ms while the log holds entries from revision ${at} on`);
        },
        // etcd does not answer: nothing to read meanwhile.
        () => undefined,
      )
      .finally(() => {
        this.#looking = false;
      });
  }
}
