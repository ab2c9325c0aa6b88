/**
 * When each node's head block changes: a poll of each node every `pollMs` with a read that
 * names the head and costs the node little (GET /state under an address prefix no family
 * uses: an empty page with the `head` field), and the gaps between consecutive new heads,
 * the commit pauses a client sees.
 */
import { Target } from '../../src/bench/target.js';

export interface HeadChange {
  /** performance.now() when the poll saw it. */
  t: number;
  id: string;
}

/** The head block id and number of a node (GET /blocks?limit=1). */
export async function headOf(t: Target): Promise<{ id: string; num: number }> {
  const r = await t.request('GET', '/blocks?limit=1', undefined, undefined, 10_000);
  const b = JSON.parse(r.body) as { data?: Array<{ header_signature: string; header: { block_num: string } }> };
  const h = b.data?.[0];
  if (r.status !== 200 || !h) throw new Error(`GET ${t.url}/blocks?limit=1 answered HTTP ${r.status}`);
  return { id: h.header_signature, num: Number(h.header.block_num) };
}

export class HeadWatcher {
  readonly changes: HeadChange[][];
  /** Polls that got no answer (a node down), per node. */
  readonly failures: number[];
  readonly #targets: Target[];
  readonly #pollMs: number;
  #running = true;
  readonly #loops: Array<Promise<void>>;

  constructor(urls: string[], pollMs: number) {
    this.#pollMs = pollMs;
    this.#targets = urls.map((u) => new Target(u, 1));
    this.changes = urls.map(() => []);
    this.failures = urls.map(() => 0);
    this.#loops = this.#targets.map((_, i) => this.#loop(i));
  }

  async #loop(i: number): Promise<void> {
    const t = this.#targets[i] as Target;
    const list = this.changes[i] as HeadChange[];
    while (this.#running) {
      const started = performance.now();
      try {
        const r = await t.request('GET', '/state?address=ffffffff&limit=1', undefined, undefined, 5000);
        const m = /"head":"([0-9a-f]+)"/.exec(r.body);
        const now = performance.now();
        if (m?.[1] && list.at(-1)?.id !== m[1]) list.push({ t: now, id: m[1] });
      } catch {
        this.failures[i] = (this.failures[i] ?? 0) + 1;
      }
      const wait = this.#pollMs - (performance.now() - started);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
    for (const t of this.#targets) t.close();
  }
}

export interface Gaps {
  /** New heads seen in the window. */
  heads: number;
  /** Longest time between consecutive new heads among those that end after `from` and start before `to`, ms. */
  maxGapMs: number;
  /** When that gap began (ms after `origin`). */
  maxGapStartMs: number;
}

/** The longest gap between consecutive new heads that overlaps [from, to]; times from performance.now(). */
export function longestGap(changes: HeadChange[], from: number, to: number, origin: number): Gaps {
  let maxGap = 0;
  let start = 0;
  let heads = 0;
  for (let k = 1; k < changes.length; k++) {
    const a = (changes[k - 1] as HeadChange).t;
    const b = (changes[k] as HeadChange).t;
    if (b >= from && a <= to) {
      heads++;
      if (b - a > maxGap) {
        maxGap = b - a;
        start = a;
      }
    }
  }
  // A pause still running at `to`: from the last new head up to `to`.
  const last = changes.at(-1)?.t ?? from;
  if (last < to && to - Math.max(last, from) > maxGap) {
    maxGap = to - Math.max(last, from);
    start = Math.max(last, from);
  }
  return { heads, maxGapMs: Math.round(maxGap), maxGapStartMs: Math.round(start - origin) };
}

/** The first new head seen at or after `t` (ms after it), or -1. */
export function firstHeadAfter(changes: HeadChange[], t: number): number {
  const c = changes.find((x) => x.t >= t);
  return c ? Math.round(c.t - t) : -1;
}
