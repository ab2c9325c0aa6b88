/**
 * The event filter engine, on the event filter thread only (filter-thread.ts): compiles a
 * request's filters with RE2 (the re2js package) within the caps of filters.ts and selects
 * a block's events for a subscription. Every pattern evaluation checks the block's deadline.
 */
import { RE2Set, RE2JSException } from 're2js';
import * as P from './proto.js';
import { DFA_MEMORY, LIMITS, STATE_DELTA, charge, precheck, tooLarge, tooMuch, type MatchBlock, type Selection } from './filters.js';

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
type Test = (attrs: Attr[], budget: Budget) => boolean;

/** A subscription ready to match: its type and one test per filter. */
export interface Subscription {
  eventType: string;
  tests: Test[];
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
    const tests: Test[] = [];
    for (const f of s.filters) {
      const test = compileFilter(f);
      if (typeof test === 'string') return test;
      total += test.charge;
      if (total > LIMITS.requestProgram) return tooMuch(total);
      tests.push(test.test);
    }
    out.push({ eventType: s.eventType, tests });
  }
  return { subs: out, charge: total };
}

function compileFilter(f: P.EventFilterMsg): { test: Test; charge: number } | string {
  const values = (attrs: Attr[]): string[] => attrs.filter((a) => a.key === f.key).map((a) => a.value);
  const T = P.FilterType;
  switch (f.filterType) {
    case T.SIMPLE_ANY:
      return { test: (attrs) => values(attrs).some((v) => v === f.matchString), charge: 0 };
    case T.SIMPLE_ALL:
      return { test: (attrs) => values(attrs).every((v) => v === f.matchString), charge: 0 };
    case T.REGEX_ANY:
    case T.REGEX_ALL: {
      // A set of one pattern: RE2JS.compile's DFA may grow to 8 MiB; a set's is bounded by DFA_MEMORY.
      const set = new RE2Set(RE2Set.UNANCHORED, 0, DFA_MEMORY);
      try {
        set.add(f.matchString);
        set.compile();
      } catch (err) {
        const message = err instanceof RE2JSException ? err.message : String(err);
        const hint = hintFor(message);
        return `Invalid regular expression in filter on "${f.key}": ${message}${hint ? `; ${hint} (filters are RE2 syntax, matched in linear time)` : ''}`;
      }
      const size = set.prog.numInst();
      if (size > LIMITS.program) return tooLarge(f.key, size, false);
      // Unanchored: a match anywhere in the value, as Python's re.search.
      const matches = (v: string, budget: Budget): boolean => {
        const hit = set.match(v).length > 0;
        if (performance.now() > budget.deadline) throw new OverBudget();
        return hit;
      };
      const test: Test =
        f.filterType === T.REGEX_ANY
          ? (attrs, budget) => values(attrs).some((v) => matches(v, budget))
          : (attrs, budget) => values(attrs).every((v) => matches(v, budget));
      return { test, charge: charge(size) };
    }
    default:
      return `Invalid filter type ${f.filterType} in filter on "${f.key}"`;
  }
}

const matches = (s: Subscription, e: MatchBlock['events'][number], budget: Budget): boolean =>
  s.eventType === e.eventType && s.tests.every((t) => t(e.attributes, budget));

/**
 * The events of one block a subscriber gets: block-commit first, then the processors'
 * events, then one state-delta per state-delta subscription with the changes whose address
 * passes its filters (none: no event). An event several subscriptions match is sent once.
 * Throws OverBudget past the budget's deadline.
 */
export function select(b: MatchBlock, subs: Subscription[], budget: Budget): Selection {
  const events: number[] = [];
  b.events.forEach((e, i) => {
    if (subs.some((s) => matches(s, e, budget))) events.push(i);
  });
  const deltas: number[][] = [];
  for (const s of subs) {
    if (s.eventType !== STATE_DELTA) continue;
    const picked: number[] = [];
    b.addresses.forEach((address, i) => {
      if (s.tests.every((t) => t([{ key: 'address', value: address }], budget))) picked.push(i);
    });
    if (picked.length > 0) deltas.push(picked);
  }
  return { events, deltas };
}
