/**
 * The event filter engine, on the event filter thread only (filter-thread.ts): compiles a
 * request's filters with RE2 (the re2js package) within the caps of filters.ts and selects
 * a block's events for a subscription. Every pattern evaluation checks the block's deadline.
 */
import { RE2JS, RE2Set, RE2JSException } from 're2js';
import * as P from './proto.js';
import { DFA_MEMORY, LIMITS, STATE_DELTA, charge, precheck, tooLarge, tooMuch, type MatchBlock, type Selection } from './filters.js';

/**
 * re2js's lazy DFA, as an RE2Set holds one (the package does not export the class). An
 * RE2JS pattern builds its own on first use with the package's budget of 8 MiB (about 5 MiB
 * of heap once filled, measured here), which re2js offers no option to change; each pattern
 * here is given one of DFA_MEMORY instead (test/component-filters.test.ts checks it holds).
 */
const Dfa = ((): (new (prog: unknown, maxMem: number) => RE2Set['dfa']) => {
  const set = new RE2Set();
  set.add('');
  set.compile();
  return set.dfa.constructor as new (
    prog: unknown,
    maxMem: number,
  ) => RE2Set['dfa'];
})();

/** Compiles a pattern as RE2 does, its DFA bounded to DFA_MEMORY. Throws RE2's error for what RE2 refuses. */
export function compilePattern(pattern: string): RE2JS {
  const re = RE2JS.compile(pattern);
  re.re2Input.lazyDFA = new Dfa(re.re2Input.prog, DFA_MEMORY);
  return re;
}

/** Why the pattern text is refused, named for the constructs RE2 does not have (linear time). */
function hintFor(message: string): string {
  if (/escape sequence: `\\[1-9]/.test(message) || /`\(\?P[=>]?/.test(message)) return 'backreferences are not supported';
  if (/`\(\?[=!]/.test(message) || /named capture: `\(\?<[=!]/.test(message)) return 'lookahead and lookbehind assertions are not supported';
  if (/`\(\?>/.test(message) || /nested repetition operator: `[*+?}][+]/.test(message)) {
    return 'atomic groups and possessive quantifiers are not supported';
  }
  if (/escape sequence: `\\Z`/.test(message)) return 'the end of the value is \\z';
  return '';
}

/** Thrown by a pattern evaluation past the deadline of the block being matched. */
export class OverBudget extends Error {}

/** When the block being matched must be done (performance.now() time), checked after each pattern evaluation. */
export interface Budget {
  deadline: number;
}

type Attr = { key: string; value: string };

/** One filter, ready: the attribute it reads, ANY or ALL, and the test of one value. */
interface Filter {
  key: string;
  all: boolean;
  test: (value: string, budget: Budget) => boolean;
}

/** A subscription ready to match: its type and its filters. */
export interface Subscription {
  eventType: string;
  filters: Filter[];
}

/** A request's subscriptions, compiled, with what they count for in the caps. */
export interface Compiled {
  subs: Subscription[];
  charge: number;
}

/** Compiles a request's subscriptions; a string says what is wrong (INVALID_FILTER). */
export function compileSubscriptions(subs: P.EventSubscriptionMsg[]): Compiled | string {
  // The bounds from the text first: nothing too large is compiled.
  const pre = precheck(subs);
  if (typeof pre === 'string') return pre;
  const out: Subscription[] = [];
  let total = 0;
  for (const s of subs) {
    const filters: Filter[] = [];
    for (const f of s.filters) {
      const c = compileFilter(f);
      if (typeof c === 'string') return c;
      total += c.charge;
      if (total > LIMITS.requestProgram) return tooMuch(total);
      filters.push(c.filter);
    }
    out.push({ eventType: s.eventType, filters });
  }
  return { subs: out, charge: total };
}

function compileFilter(f: P.EventFilterMsg): { filter: Filter; charge: number } | string {
  const T = P.FilterType;
  const all = f.filterType === T.SIMPLE_ALL || f.filterType === T.REGEX_ALL;
  switch (f.filterType) {
    case T.SIMPLE_ANY:
    case T.SIMPLE_ALL:
      return { filter: { key: f.key, all, test: (v) => v === f.matchString }, charge: 0 };
    case T.REGEX_ANY:
    case T.REGEX_ALL: {
      let re: RE2JS;
      try {
        re = compilePattern(f.matchString);
      } catch (err) {
        const message = err instanceof RE2JSException ? err.message : String(err);
        const hint = hintFor(message);
        return `Invalid regular expression in filter on "${f.key}": ${message}${hint ? `; ${hint} (filters are RE2 syntax, matched in linear time)` : ''}`;
      }
      const size = re.programSize();
      if (size > LIMITS.program) return tooLarge(f.key, size, false);
      // test(): a match anywhere in the value, as Python's re.search.
      const test = (v: string, budget: Budget): boolean => {
        const hit = re.test(v);
        if (performance.now() > budget.deadline) throw new OverBudget();
        return hit;
      };
      return { filter: { key: f.key, all, test }, charge: charge(size) };
    }
    default:
      return `Invalid filter type ${f.filterType} in filter on "${f.key}"`;
  }
}

/** Whether the values of the filter's attribute pass: ANY, some does; ALL, every one does (none: it passes). */
function passes(f: Filter, attrs: Attr[], budget: Budget): boolean {
  for (const a of attrs) {
    if (a.key !== f.key) continue;
    if (f.test(a.value, budget) !== f.all) return !f.all;
  }
  return f.all;
}

function matches(s: Subscription, e: MatchBlock['events'][number], budget: Budget): boolean {
  if (s.eventType !== e.eventType) return false;
  for (const f of s.filters) if (!passes(f, e.attributes, budget)) return false;
  return true;
}

/** Whether a change passes a state-delta subscription's filters: its one attribute is `address`. */
function passesAddress(s: Subscription, address: string, budget: Budget): boolean {
  for (const f of s.filters) {
    if (f.key !== 'address' ? !f.all : !f.test(address, budget)) return false;
  }
  return true;
}

/**
 * The events of one block a subscriber gets: block-commit first, then the processors'
 * events, then one state-delta per state-delta subscription with the changes whose address
 * passes its filters (none: no event). An event several subscriptions match is sent once.
 * Throws OverBudget past the budget's deadline.
 */
export function select(b: MatchBlock, subs: Subscription[], budget: Budget): Selection {
  const events: number[] = [];
  for (const [i, e] of b.events.entries()) {
    if (subs.some((s) => matches(s, e, budget))) events.push(i);
  }
  const deltas: number[][] = [];
  for (const s of subs) {
    if (s.eventType !== STATE_DELTA) continue;
    const picked: number[] = [];
    for (const [i, address] of b.addresses.entries()) if (passesAddress(s, address, budget)) picked.push(i);
    if (picked.length > 0) deltas.push(picked);
  }
  return { events, deltas };
}
