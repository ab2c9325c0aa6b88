/**
 * The event filter thread's work (its entry is workers/event-filter.ts): it holds every
 * event subscription's compiled filters and matches blocks against them, for the client event
 * service on the HTTP thread (client-service.ts, through filter-client.ts). All of a client's
 * patterns are compiled and run here, so no pattern can hold the HTTP thread, whatever it
 * costs; what it may cost here is bounded by the caps (filters.ts LIMITS: a pattern's size,
 * a request's and all subscriptions' together) and by MATCH_BUDGET_MS a block per
 * subscription, past which the subscription is ended.
 *
 * Messages are handled one at a time, in order: a subscription compiled before a match
 * asked after it is there for that match.
 */
import type * as P from './proto.js';
import { LIMITS, MATCH_BUDGET_MS, type MatchBlock, type Selection } from './filters.js';
import { compileSubscriptions, OverBudget, select, type Compiled } from './filter-engine.js';

/** Messages to the filter thread. `req` numbers the request; a subscription is named by the `req` that made it. */
export type ToFilters =
  /** Compile and keep a subscription (replacing `replaces`, if the thread still has it). */
  | { op: 'subscribe'; req: number; subs: P.EventSubscriptionMsg[]; replaces: number | null }
  /** Forget a subscription (unsubscribed, gone, cut off). No answer. */
  | { op: 'drop'; set: number }
  /** The node stops: the thread ends once this is read (no answer). */
  | { op: 'close' }
  /** Match consecutive blocks against subscriptions. */
  | { op: 'match'; req: number; sets: number[]; blocks: MatchBlock[] }
  /** Compile once and match named blocks (CLIENT_EVENTS_GET). */
  | { op: 'get'; req: number; subs: P.EventSubscriptionMsg[]; blocks: MatchBlock[] };

/**
 * What one subscription got of a match: its selections, one per block, in order; `over` when
 * its matching of the next block ran past MATCH_BUDGET_MS (the subscription is then dropped
 * here; `ms`: how long it ran); null when the thread no longer has the subscription.
 */
export type SetResult = { selections: Selection[]; over?: { ms: number } } | null;

export type FromFilters =
  | { req: number; error: string }
  | { req: number; ok: true }
  | { req: number; results: SetResult[] }
  | { req: number; selections: Selection[] };

/** A CLIENT_EVENTS_GET may spend this much matching all its blocks. */
export const GET_BUDGET_MS = 4 * MATCH_BUDGET_MS;

export class FilterThread {
  readonly #sets = new Map<number, Compiled>();
  #charged = 0;
  readonly #budgetMs: number;
  readonly #getBudgetMs: number;

  /** The budgets are MATCH_BUDGET_MS and GET_BUDGET_MS but in tests. */
  constructor(budgets: { blockMs?: number; getMs?: number } = {}) {
    this.#budgetMs = budgets.blockMs ?? MATCH_BUDGET_MS;
    this.#getBudgetMs = budgets.getMs ?? GET_BUDGET_MS;
  }

  /** RE2 instructions held by all subscriptions (as LIMITS counts them). */
  get charged(): number {
    return this.#charged;
  }

  get subscriptions(): number {
    return this.#sets.size;
  }

  handle(m: ToFilters): FromFilters | undefined {
    switch (m.op) {
      case 'subscribe':
        return this.#subscribe(m.req, m.subs, m.replaces);
      case 'drop':
        this.#drop(m.set);
        return undefined;
      case 'close':
        return undefined;
      case 'match':
        return { req: m.req, results: m.sets.map((id) => this.#match(id, m.blocks)) };
      case 'get':
        return this.#get(m.req, m.subs, m.blocks);
    }
  }

  #subscribe(req: number, subs: P.EventSubscriptionMsg[], replaces: number | null): FromFilters {
    const c = compileSubscriptions(subs);
    if (typeof c === 'string') return { req, error: c };
    const old = replaces === null ? undefined : this.#sets.get(replaces);
    const after = this.#charged - (old?.charge ?? 0) + c.charge;
    if (after > LIMITS.nodeProgram) {
      return {
        req,
        error: `The node's event filters are full: its subscriptions' regular expressions hold ${this.#charged} of ${LIMITS.nodeProgram} RE2 instructions and these need ${c.charge}; try again later`,
      };
    }
    if (replaces !== null) this.#drop(replaces);
    this.#sets.set(req, c);
    this.#charged += c.charge;
    return { req, ok: true };
  }

  #drop(id: number): void {
    const c = this.#sets.get(id);
    if (!c) return;
    this.#sets.delete(id);
    this.#charged -= c.charge;
  }

  #match(id: number, blocks: MatchBlock[]): SetResult {
    const c = this.#sets.get(id);
    if (!c) return null;
    const selections: Selection[] = [];
    for (const b of blocks) {
      const start = performance.now();
      try {
        selections.push(select(b, c.subs, { deadline: start + this.#budgetMs }));
      } catch (err) {
        if (!(err instanceof OverBudget)) throw err;
        this.#drop(id);
        return { selections, over: { ms: Math.round(performance.now() - start) } };
      }
    }
    return { selections };
  }

  #get(req: number, subs: P.EventSubscriptionMsg[], blocks: MatchBlock[]): FromFilters {
    const c = compileSubscriptions(subs);
    if (typeof c === 'string') return { req, error: c };
    const budget = { deadline: performance.now() + this.#getBudgetMs };
    try {
      return { req, selections: blocks.map((b) => select(b, c.subs, budget)) };
    } catch (err) {
      if (!(err instanceof OverBudget)) throw err;
      return { req, error: `Matching took more than ${this.#getBudgetMs} ms` };
    }
  }
}
