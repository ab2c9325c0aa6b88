/**
 * Instruments for `cairn bench`'s load loop (src/bench/run.ts) in a cluster: a Target that
 * records the time and status of every POST /batches answer, and a batch source that marks
 * 1 batch in `every`; once a marked batch is accepted (202: etcd has committed the log entry
 * holding it), it is followed on every node of the cluster with a long-polled
 * POST /batch_statuses?wait until it is COMMITTED on all of them (a node that does not know
 * it yet, UNKNOWN, is asked again every 2 ms). Submit-to-committed-on-all is measured from
 * when the load loop took the batch, just before its first POST.
 */
import type { Batch, BatchSource } from '../../src/bench/generator.js';
import { type Reply, Target } from '../../src/bench/target.js';

export interface Answer {
  /** performance.now() when the answer came (or the request failed: status 0). */
  t: number;
  status: number;
  url: string;
}

export interface AllCommitted {
  /** Submit to committed on every node, ms; NaN when it was not. */
  ms: number;
  why?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class Recorder {
  readonly answers: Answer[] = [];
  readonly probes: Array<Promise<AllCommitted>> = [];
  readonly #marked = new WeakMap<Uint8Array, { id: string; t0: number }>();
  readonly #nodes: Target[];
  readonly #timeoutMs: number;

  /** `nodes`: where a marked batch must commit (none: nothing is followed). */
  constructor(nodes: string[], timeoutMs: number) {
    this.#nodes = nodes.map((u) => new Target(u, 64));
    this.#timeoutMs = timeoutMs;
  }

  mark(b: Batch, t0: number): void {
    const id = b.ids[0];
    if (id !== undefined && this.#nodes.length > 0) this.#marked.set(b.body, { id, t0 });
  }

  answered(url: string, status: number, body: Uint8Array | undefined): void {
    this.answers.push({ t: performance.now(), status, url });
    const m = body && status === 202 ? this.#marked.get(body) : undefined;
    if (!m || !body) return;
    this.#marked.delete(body);
    this.probes.push(this.#follow(m.id, m.t0));
  }

  async #follow(id: string, t0: number): Promise<AllCommitted> {
    const ends = await Promise.all(this.#nodes.map((t) => this.#committedOn(t, id, t0)));
    const bad = ends.find((e) => typeof e === 'string');
    if (typeof bad === 'string') return { ms: Number.NaN, why: bad };
    return { ms: Math.max(...(ends as number[])) - t0 };
  }

  async #committedOn(t: Target, id: string, t0: number): Promise<number | string> {
    const body = Buffer.from(JSON.stringify([id]));
    for (;;) {
      if (performance.now() - t0 > this.#timeoutMs) return `not committed on ${t.url} within ${this.#timeoutMs / 1000} s`;
      let st: string;
      try {
        const r = await t.request('POST', '/batch_statuses?wait=20', body, 'application/json');
        st = (JSON.parse(r.body) as { data?: Array<{ status: string }> }).data?.[0]?.status ?? `HTTP ${r.status}`;
      } catch (err) {
        st = `error ${(err as Error).message}`;
      }
      if (st === 'COMMITTED') return performance.now();
      if (st === 'INVALID') return `INVALID on ${t.url}`;
      // UNKNOWN: this node has not read the entry from the log yet.
      if (st !== 'PENDING') await sleep(2);
    }
  }

  close(): void {
    for (const t of this.#nodes) t.close();
  }
}

/** A Target whose POST /batches answers go to a Recorder. */
export class RecordingTarget extends Target {
  readonly #rec: Recorder;

  constructor(url: string, connections: number, rec: Recorder) {
    super(url, connections);
    this.#rec = rec;
  }

  override async request(method: string, path: string, body?: Uint8Array, contentType?: string, timeoutMs?: number): Promise<Reply> {
    if (method !== 'POST' || path !== '/batches') return super.request(method, path, body, contentType, timeoutMs);
    try {
      const r = await super.request(method, path, body, contentType, timeoutMs);
      this.#rec.answered(this.url, r.status, body);
      return r;
    } catch (err) {
      this.#rec.answered(this.url, 0, body);
      throw err;
    }
  }
}

/** A source that marks 1 batch in `every` as the load loop takes it (just before its first POST). */
export class MarkingSource implements BatchSource {
  readonly #inner: BatchSource;
  readonly #every: number;
  readonly #rec: Recorder;
  #n = 0;

  constructor(inner: BatchSource, every: number, rec: Recorder) {
    this.#inner = inner;
    this.#every = every;
    this.#rec = rec;
  }

  take(): Batch | undefined {
    const b = this.#inner.take();
    if (b && this.#n++ % this.#every === 0) this.#rec.mark(b, performance.now());
    return b;
  }

  ready(): Promise<void> {
    return this.#inner.ready();
  }

  get done(): boolean {
    return this.#inner.done;
  }

  get total(): number {
    return this.#inner.total;
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}
