/**
 * Fresh reads of the cluster's log for status reads: a batch-status read on a member first
 * waits (readThrough) until the follower has read every log entry etcd holds now, so that a
 * batch another member acknowledged does not read UNKNOWN here. The log's tip is read from
 * etcd (one read in flight shared by every wait, fresh-read.ts); the follower releases the
 * waits as its read position passes their targets.
 */
import type { Etcd3 } from 'etcd3';
import { LOG } from './etcd.js';
import { FreshRead } from './fresh-read.js';

/** A status wait whose read of the log's tip failed asks again after this long (ms). */
const TIP_RETRY_MS = 200;

export interface TipReadsOptions {
  client: Etcd3;
  /** The follower's next log revision to read. */
  readNext(): number;
  /** The follower's queue of entries being checked: a wait ends behind it. */
  order(): Promise<void>;
  closed(): boolean;
}

export class TipReads {
  readonly #o: TipReadsOptions;
  /** Status reads waiting for the log to be read up to a revision (readThrough). */
  readonly #waits = new Set<{ target: number; resolve: () => void; timer: NodeJS.Timeout }>();
  /** The log's tip as etcd holds it now, read for readThrough: one read in flight, shared. */
  readonly #tip = new FreshRead(() => this.#readTip());

  constructor(o: TipReadsOptions) {
    this.#o = o;
  }

  /** Status reads are waiting for the follower. */
  get waiting(): boolean {
    return this.#waits.size > 0;
  }

  /**
   * Resolves once this member has read every log entry etcd holds now (or after
   * `timeoutMs`, or at once when etcd does not answer): a status read after it is as
   * fresh as the log.
   */
  async readThrough(timeoutMs: number): Promise<void> {
    const o = this.#o;
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
    while (target === null && !o.closed() && Date.now() < until) {
      target = await Promise.race([this.#tip.get(), timeUp]);
      if (target === null) await Promise.race([new Promise((resolve) => setTimeout(resolve, TIP_RETRY_MS)), timeUp]);
    }
    clearTimeout(timer);
    if (target !== null && o.readNext() <= target && !o.closed())
      await new Promise<void>((resolve) => {
        const w = {
          target,
          resolve,
          timer: setTimeout(
            () => {
              this.#waits.delete(w);
              resolve();
            },
            Math.max(0, until - Date.now()),
          ),
        };
        this.#waits.add(w);
      });
    // Read, then taken in order (checked, verified) behind what came before it.
    await o.order();
  }

  /** Resolves the readThrough waits that the log read so far satisfies (all of them: `all`). */
  release(all: boolean): void {
    const readNext = this.#o.readNext();
    for (const w of this.#waits) {
      if (!all && readNext <= w.target) continue;
      this.#waits.delete(w);
      clearTimeout(w.timer);
      w.resolve();
    }
  }

  /**
   * The revision of the newest log entry etcd holds from the read position on (0: none), or
   * null when etcd does not answer. Status waits share these reads (#tip): a flood of waits
   * for unknown ids costs etcd one read in flight from each member, not one each.
   */
  async #readTip(): Promise<number | null> {
    try {
      const res = await this.#o.client.getAll().prefix(LOG).minModRevision(String(this.#o.readNext())).sort('Mod', 'Descend').limit(1).exec();
      return Number(res.kvs[0]?.mod_revision ?? 0);
    } catch {
      return null;
    }
  }
}
