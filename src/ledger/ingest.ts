/**
 * Ingest: the way of a POST /batches body into the ledger. The back-pressure check (by a
 * scan of the body, before any signature work), verification in the verify pool, the
 * queue-full exemption of the node's own batches, and the pending-pool write; a body is
 * answered once its batches are durable.
 */
import { log } from '../log.js';
import type { VerifyResult } from './verify.js';
import { VerifyPool, type VerifyItem } from './verify-pool.js';
import { LedgerUnavailable } from './pending-writer.js';
import type { AckWriter } from './ack-writer.js';

export type SubmitResult =
  | { ok: true; ids: string[] }
  /** UNAVAILABLE: the node cannot store batches now (a failed write, a fault, shutting down); retry later. */
  | { ok: false; code: 'EMPTY' | 'UNDECODABLE' | 'INVALID' | 'QUEUE_FULL' | 'UNAVAILABLE'; message: string };

interface QueuedBody extends VerifyItem {
  /** When the body arrived (performance.now(); 0 with metrics off), for the stage metrics. */
  at: number;
  /** Set when the body got past a full queue only as the node's own, unseen batches (checked after verification). */
  exemptOnly: boolean;
  resolve(r: SubmitResult): void;
  reject(e: unknown): void;
}

/**
 * Number of batches in a BatchList body, by a scan of its top-level fields (no decoding,
 * no copies): what the queue limit counts before any signature work. A body that is not
 * a well-formed list counts as what was read so far, at least 1 (verification rejects it).
 */
export function countBatches(body: Uint8Array): number {
  let n = 0;
  let o = 0;
  const len = body.length;
  const varint = (): number => {
    let v = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (o >= len) return -1;
      const b = body[o++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
    return -1;
  };
  while (o < len) {
    const tag = varint();
    if (tag < 0) break;
    const wire = tag & 7;
    if (wire === 2) {
      const l = varint();
      if (l < 0 || o + l > len) break;
      o += l;
      if (tag >>> 3 === 1) n++;
    } else if (wire === 0) {
      if (varint() < 0) break;
    } else if (wire === 1) o += 8;
    else if (wire === 5) o += 4;
    else break;
  }
  return Math.max(1, n);
}

/** The stages of a submission the metrics time (IngestMetrics.stage). */
export type SubmitStage = 'verify' | 'durable';

/** Hooks of the ledger's ingest (POST /batches); absent when metrics are off (src/metrics.ts implements them). */
export interface IngestMetrics {
  /** `n` batches arrived in a body that passed the entry checks. */
  received(n: number): void;
  /** Batches acknowledged (durable in the pending pool), by id. */
  accepted(ids: readonly string[]): void;
  /**
   * One stage of an accepted body, in seconds: `verify` from its arrival to its verdict (the
   * queue in front of the verify pool and the verify itself), `durable` from the verdict to
   * durable in the pending pool (the pool's group write).
   */
  stage(stage: SubmitStage, seconds: number): void;
  /** `n` batches of a received body refused, by the submission's result code. */
  rejected(reason: string, n: number): void;
  /** `n` batches refused on arrival (counted as received and rejected). */
  rejectedOnArrival(reason: string, n: number): void;
}

export interface IngestOptions {
  nodePublicKey: string;
  poolThreads: number;
  families: string[];
  writer: AckWriter;
  /** The back-pressure limit, as the committer last reported it. */
  queueLimit(): number;
  /** Whether a batch is settled already (committed or invalid): then it is not exempt. */
  settled(id: string): boolean;
  /** Null while the ledger is sound; else the message of the 503 (the ledger's fault). */
  faultMessage(): string | null;
  /** Metrics hooks (src/metrics.ts); absent when metrics are off. */
  metrics?: IngestMetrics;
}

export class Ingest {
  readonly #o: IngestOptions;
  readonly #pool: VerifyPool<QueuedBody>;
  readonly #nodeKeyBytes: Buffer;
  /** Batches of submissions accepted past the limit check and not answered yet. */
  #inflight = 0;
  #backpressure = false;

  constructor(opts: IngestOptions) {
    this.#o = opts;
    this.#nodeKeyBytes = Buffer.from(opts.nodePublicKey);
    this.#pool = new VerifyPool<QueuedBody>({
      threads: opts.poolThreads,
      families: opts.families,
      onVerified: (items, results) => void this.#accept(items, results),
      onFailed: (items, err) => {
        for (const i of items) i.reject(err);
      },
    });
  }

  /** True when `batches` more would exceed the limit (checked before any signature work). */
  overLimit(batches = 1): boolean {
    return this.#o.writer.size + this.#inflight + batches > this.#o.queueLimit();
  }

  /** Submits one POST /batches body. Resolves once every batch is durable in the pending pool. */
  submit(body: Uint8Array): Promise<SubmitResult> {
    const fault = this.#o.faultMessage();
    if (fault !== null) {
      this.#o.metrics?.rejectedOnArrival('UNAVAILABLE', countBatches(body));
      return Promise.resolve({ ok: false, code: 'UNAVAILABLE', message: fault });
    }
    let nodeKeyOnly: string | undefined;
    // The limit counts batches, not requests: one list of many must not slip in as one.
    const n = countBatches(body);
    this.#o.metrics?.received(n);
    if (this.overLimit(n)) {
      // Only the node's own batches are exempt, each one (checked after verification);
      // a body without the node's key anywhere is refused now.
      if (Buffer.from(body.buffer, body.byteOffset, body.byteLength).indexOf(this.#nodeKeyBytes) < 0) {
        this.#noteBackpressure(true);
        this.#o.metrics?.rejected('QUEUE_FULL', n);
        return Promise.resolve({ ok: false, code: 'QUEUE_FULL', message: 'queue full' });
      }
      nodeKeyOnly = this.#o.nodePublicKey;
    } else {
      this.#noteBackpressure(false);
    }
    this.#inflight += n;
    return new Promise<SubmitResult>((resolve, reject) => {
      this.#pool.push({ body, at: this.#o.metrics ? performance.now() : 0, nodeKeyOnly, exemptOnly: nodeKeyOnly !== undefined, resolve, reject });
    }).finally(() => {
      this.#inflight -= n;
    });
  }

  /** Exempt from a full queue: signed by the node and neither pending, committed nor settled invalid. */
  #exempt(b: { id: string; signer: string }): boolean {
    const w = this.#o.writer;
    return b.signer === this.#o.nodePublicKey && !w.has(b.id) && !w.isWriting(b.id) && !this.#o.settled(b.id);
  }

  #noteBackpressure(on: boolean): void {
    if (on === this.#backpressure) return;
    this.#backpressure = on;
    if (on) log.info(`applying back pressure: ${this.#o.writer.size} pending, limit ${this.#o.queueLimit()}`);
    else log.info('ending back pressure');
  }

  /** One verify task's verdicts: the accepted bodies' batches go to the pending pool as one write. */
  async #accept(items: QueuedBody[], results: VerifyResult[]): Promise<void> {
    const batches: Array<{ id: string; bytes: Uint8Array }> = [];
    const accepted: Array<{ item: QueuedBody; ids: string[] }> = [];
    // The pool answers one verdict per body, in order.
    for (const [idx, item] of items.entries()) {
      const r = results[idx] ?? { ok: false, code: 'INVALID', message: 'no verdict for this body' };
      if (!r.ok) {
        this.#o.metrics?.rejected(r.code, countBatches(item.body));
        item.resolve(r);
        continue;
      }
      if (item.exemptOnly && !r.batches.every((b) => this.#exempt(b))) {
        this.#o.metrics?.rejected('QUEUE_FULL', r.batches.length);
        item.resolve({ ok: false, code: 'QUEUE_FULL', message: 'queue full' });
        continue;
      }
      // Views, not copies: the pending-pool record copies them once.
      for (const b of r.batches) batches.push({ id: b.id, bytes: item.body.subarray(b.start, b.end) });
      accepted.push({ item, ids: r.batches.map((b) => b.id) });
    }
    if (accepted.length === 0) return;
    const m = this.#o.metrics;
    const verified = m ? performance.now() : 0;
    if (m) for (const a of accepted) m.stage('verify', (verified - a.item.at) / 1000);
    try {
      await this.#o.writer.persist(batches);
    } catch (err) {
      // Nothing of these bodies is acknowledged: each request gets the reason (503).
      const message = err instanceof LedgerUnavailable ? err.message : `The batches could not be stored: ${String(err)}`;
      for (const a of accepted) a.item.resolve({ ok: false, code: 'UNAVAILABLE', message });
      this.#o.metrics?.rejected('UNAVAILABLE', batches.length);
      return;
    }
    if (m) {
      m.stage('durable', (performance.now() - verified) / 1000);
      m.accepted(batches.map((b) => b.id));
    }
    for (const a of accepted) a.item.resolve({ ok: true, ids: a.ids });
  }

  /** Verifies bodies against another family list on the same threads (a circuit ledger's checks). */
  verifyBodies(bodies: readonly Uint8Array[], families: string[]): Promise<VerifyResult[]> {
    return this.#pool.verifyBodies(bodies, families);
  }

  /** Share of the verify threads busy since start (for metrics). */
  get verifyUtilization(): number {
    return this.#pool.utilization;
  }

  close(): Promise<void> {
    return this.#pool.destroy();
  }
}
