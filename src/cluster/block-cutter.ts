/**
 * Where a block of the cluster's log ends. The follower hands it each checked entry in log
 * order: an envelope's batches go into the open block (the first one opens it), and the
 * block closes at the first cut entry or closing envelope that names it, or at its bound
 * (BLOCK_MAX_BATCHES, BLOCK_MAX_BYTES): a rule of the log alone, so every member cuts the
 * same blocks. A closed block goes to the committer (handover.ts) as one round. The member
 * whose envelope opened a block appends its cut after the block's linger; any other member
 * does so later, should that one be gone. The acknowledgements ask it whether an envelope
 * they append now closes the open block (it has been open the close age).
 */
import type { Etcd3 } from 'etcd3';
import { log } from '../log.js';
import type { Signer } from '../crypto/secp256k1.js';
import { encodeCut } from './envelope.js';
import { LOG, etcdReason } from './etcd.js';
import type { Handover } from './handover.js';

/**
 * A block of the log closes at the first cut of it, or once it holds this many batches or
 * bytes: a rule of the log alone, so every member cuts the same blocks (the same on all
 * members whatever their settings).
 */
const BLOCK_MAX_BATCHES = 1000;
const BLOCK_MAX_BYTES = 16 * 1024 * 1024;
/**
 * The block's linger, kept by the member whose envelope opened it: it appends its cut once
 * no envelope came for `quietMs`, or `maxMs` after the block opened. A quiet log
 * has a block cut 40 ms after its one envelope; under load, the first envelope appended
 * `closeAgeMs` after the block opened closes it, so blocks grow for 60 ms or more without a
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
 *
 * `closeAgeMs`: an envelope that a member appends while the block it sees open is this old
 * closes that block (CEV2, docs/cluster.md): under load, blocks end at an envelope and the
 * log needs no cut entries, each of which cost an etcd write and, on every member, a watch
 * event and a signature check. `maxMs` stays above it, so that the opener's cut is the
 * fallback for a log where no envelope comes, not a race with the closing one.
 *
 * Each member keeps its own (the blocks do not depend on them, only when they end): the
 * defaults of `--cluster-cut-quiet-ms`, `--cluster-cut-max-ms` and `--cluster-close-age-ms`
 * (docs/cluster.md), which trade the latency of a commit for CPU per batch.
 */
export const BLOCK_LINGER: BlockLinger = { quietMs: 40, maxMs: 100, closeAgeMs: 60 };
/** How long any member waits before it cuts a block another member opened (that one may be gone) (ms). */
const CUT_TAKEOVER_MS = 300;

/** The block's linger (ms): see BLOCK_LINGER. */
export interface BlockLinger {
  quietMs: number;
  maxMs: number;
  closeAgeMs: number;
}

/** The settings given, the defaults for the rest; throws when the close age is not below the longest linger. */
export function blockLinger(s: Partial<BlockLinger> | undefined): BlockLinger {
  const l: BlockLinger = {
    quietMs: s?.quietMs ?? BLOCK_LINGER.quietMs,
    maxMs: s?.maxMs ?? BLOCK_LINGER.maxMs,
    closeAgeMs: s?.closeAgeMs ?? BLOCK_LINGER.closeAgeMs,
  };
  if (l.closeAgeMs >= l.maxMs)
    throw new Error(
      `--cluster-close-age-ms (${l.closeAgeMs}) must be below --cluster-cut-max-ms (${l.maxMs}): the opener's cut is the fallback of a block no envelope closes`,
    );
  return l;
}

/** The block being filled from the log: where it began, its time and its batches. */
export interface OpenBlock {
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

export interface BlockCutterOptions {
  client: Etcd3;
  signer: Signer;
  handover: Handover;
  linger: BlockLinger;
  /** `gen` is still the follower's generation and the link is open (a timer set before a restart does nothing). */
  current(gen: number): boolean;
}

export class BlockCutter {
  readonly #o: BlockCutterOptions;
  /** The block being filled (envelopes read since the last cut). */
  #open: OpenBlock | null = null;

  constructor(o: BlockCutterOptions) {
    this.#o = o;
  }

  /** The first revision of the open block, or null. */
  get openFirst(): number | null {
    return this.#open?.first ?? null;
  }

  /** A checked envelope's batches (not empty): into the open block, which it opens if none is. */
  add(env: { rev: number; ts: number; batches: Array<{ id: string; bytes: Uint8Array }>; signer: string }, closes: number, gen: number): void {
    const { linger } = this.#o;
    let open = this.#open;
    if (!open) {
      open = {
        first: env.rev,
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
      this.#scheduleCut(open, Math.max(0, Math.min(open.openedAt + linger.maxMs, now + linger.quietMs) - now), gen);
    }
    for (const b of env.batches) {
      open.batches.push(b);
      open.bytes += b.bytes.length;
    }
    // The block ends here: at its bound, or at an envelope that closes it (the first revision it names).
    if (open.batches.length >= BLOCK_MAX_BATCHES || open.bytes >= BLOCK_MAX_BYTES || closes === open.first) this.#closeBlock(env.rev);
  }

  /** A cut entry at `rev` naming the block that began at `target`: the first cut of the open block closes it; a later one (another member's) is stale. */
  cut(target: number, rev: number): void {
    if (this.#open?.first === target) this.#closeBlock(rev);
    else this.passOver(rev);
  }

  /** An envelope left with no batch: nothing to add, but its mark still closes the block it names (as a cut would). */
  mark(closes: number, rev: number): void {
    if (closes > 0 && this.#open?.first === closes) this.#closeBlock(rev);
    else this.passOver(rev);
  }

  /** An entry that adds nothing: part of the open block, or applied on its own (the position moves). */
  passOver(rev: number): void {
    if (this.#open) return;
    this.#o.handover.push({ rev, ts: 0, batches: [] });
  }

  /**
   * The open block, when an envelope this member appends now closes it (it has been open
   * for the close age and no envelope of this member closes it already): marked as being
   * closed, so that no cut goes meanwhile. Null when the envelope closes nothing.
   */
  closing(now: number): OpenBlock | null {
    const open = this.#open;
    const closing = open && !open.closeSent && now - open.openedAt >= this.#o.linger.closeAgeMs ? open : null;
    if (closing) closing.closeSent = true;
    return closing;
  }

  /** The block being filled is dropped (its timer too). */
  drop(): void {
    if (this.#open?.timer) clearTimeout(this.#open.timer);
    this.#open = null;
  }

  /** The link closes: the open block's timer stops. */
  close(): void {
    if (this.#open?.timer) clearTimeout(this.#open.timer);
  }

  /** The open block ends at `rev` (a cut, or the size bound): it goes to the committer as one round. */
  #closeBlock(rev: number): void {
    const o = this.#open;
    if (!o) return;
    this.#open = null;
    if (o.timer) clearTimeout(o.timer);
    this.#o.handover.push({ rev, ts: o.ts, batches: o.batches });
  }

  /**
   * Appends a cut of the open block after `delay` if it is still open: soon by the member
   * whose envelope opened it, later by any other (that member may be gone). Cuts of the
   * same block by several members are harmless: the first closes it, the rest are stale.
   */
  #scheduleCut(o: OpenBlock, delay: number, gen: number): void {
    o.timer = setTimeout(() => {
      o.timer = null;
      if (this.#open !== o || !this.#o.current(gen)) return;
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
}
