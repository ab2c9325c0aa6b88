/**
 * A cluster member's acknowledgements, on the HTTP thread: in place of the pending pool it
 * takes the verified batches of POST /batches (AckWriter.persist), packs them into signed
 * envelopes (bounded count and bytes, a member's appends spaced a little apart), appends
 * each to the log in etcd and answers only once etcd has committed it (the 202). The
 * batches appended are pending (pending.ts) until the committer applies their revision; an
 * envelope appended while the open block is old enough closes it (block-cutter.ts).
 */
import type { Etcd3 } from 'etcd3';
import type { Signer } from '../crypto/secp256k1.js';
import { LedgerUnavailable } from '../ledger/pending-writer.js';
import { ENVELOPE_OVERHEAD, encodeEnvelope } from './envelope.js';
import { LOG, REMOVED, etcdReason } from './etcd.js';
import type { BlockCutter } from './block-cutter.js';
import type { PendingBatches } from './pending.js';

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

export interface AcknowledgementsOptions {
  client: Etcd3;
  /** The node's key: it signs this member's envelopes. */
  signer: Signer;
  /** Null while batches may be acknowledged; else the message of the 503. */
  refusal(): string | null;
  /** This member was removed from the cluster (at that log revision), or null. */
  removedAt(): number | null;
  pending: PendingBatches;
  cutter: BlockCutter;
  /** The spacing of this member's appends per appending member (ms). */
  appendSpacingMs: number;
}

export class Acknowledgements {
  readonly #o: AcknowledgementsOptions;
  readonly #keyPrefix: string;
  #seq = 0;
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

  constructor(o: AcknowledgementsOptions) {
    this.#o = o;
    this.#keyPrefix = `${LOG}${o.signer.publicKey}/${Date.now().toString(16)}-`;
  }

  isWriting(id: string): boolean {
    return this.#writing.has(id);
  }

  /** An envelope of `signer` was read from the log now: that member counts as appending. */
  sawAppend(signer: string): void {
    this.#appendedAt.set(signer, Date.now());
  }

  /** Appends the batches to the log; resolves once etcd has committed the envelope holding them. */
  async persist(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    const refusal = this.#o.refusal();
    if (refusal !== null) throw new LedgerUnavailable(refusal);
    if (this.#o.removedAt() !== null) throw new LedgerUnavailable(REMOVED_MESSAGE);
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
      if (this.#o.pending.has(b.id)) continue;
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

  /** Appends in progress settle. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#appends.keys()]);
  }

  /** The link closes: every envelope goes now, whatever its wait, and the appends settle. */
  async close(): Promise<void> {
    if (this.#slowCheck) clearTimeout(this.#slowCheck);
    this.#send(true);
    await this.drain();
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
      const wait = this.#lastAppendAt + this.#o.appendSpacingMs * this.#appenders(now) - now;
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
    // The block open here for its close age ends with this envelope, if it is still open
    // where the envelope lands in the log (else the mark is stale and changes nothing).
    const closing = this.#o.cutter.closing(now);
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
          this.#o.pending.track(
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
}
