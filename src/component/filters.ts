/**
 * The rules and caps of event subscribers' filters, and what the HTTP thread checks of them:
 * the filters themselves are compiled and matched on the event filter thread
 * (filter-engine.ts, filter-thread.ts, workers/event-filter.ts), never on the HTTP thread,
 * which only runs `precheck` here (a scan of the request, linear in its size) before it hands
 * a request over.
 *
 * Regular expressions are RE2 (the re2js package, RE2 in plain JavaScript): matching takes
 * time linear in the value whatever the pattern (no backtracking), so `^([0-9a-f]+)+z$`
 * costs what any pattern of its size costs. A pattern RE2 cannot run (backreferences,
 * lookaround, atomic groups, possessive quantifiers) is refused with the reason. A match is
 * a match anywhere in the value (Python's `re.search`, as upstream).
 *
 * What one pattern can cost is bounded by its RE2 program size (instructions): matching a
 * value of n characters takes at most about program × n steps, compiling grows with the
 * program. RE2's own bound on a program is 1.4 million instructions (a 1,008-character
 * pattern compiles to a million, in 2.7 s here), so a pattern's size is first bounded from
 * its text (`programBound`, before anything is compiled), then checked on the compiled
 * program against LIMITS.program. Measured with bench/filter-cost.ts (re2js 2.10.0, Node 20,
 * a loaded 2-core machine; three runs): the worst patterns found of at most 512 instructions,
 * each evaluated once with an empty DFA, cost 0.3 to 1.3 ms against a 70-character address,
 * 0.4 to 1.4 ms against a 128-character block id (up to 13 ms once, with the machine busy),
 * and 20 to 80 ms against a 4,096-character processor attribute value (EVENT_VALUE_LIMIT,
 * src/component/state-requests.ts, the longest a filter can meet); compiling one takes at most
 * 4.5 ms. `^([0-9a-f]+)+z$` costs 0.01 ms; the patterns subscribers write (`^1cf126`,
 * `^[0-9a-f]{128}$`, `^1cf126[0-9a-f]{64}$`) 1.5 to 14 µs a value, their DFA warm.
 *
 * The work one value costs all subscribers together is thus at most LIMITS.nodeProgram ×
 * its length steps; on top of it, the filter thread ends a subscription whose matching of
 * one block takes more than MATCH_BUDGET_MS (event-delivery.ts cuts it off and says so).
 */
import * as P from './proto.js';

/** Bounds of what one request may ask (a request over them is refused as INVALID_FILTER). */
export const LIMITS = {
  subscriptions: 64,
  filters: 16,
  /** A filter's match_string, key and a subscription's event_type, in characters. */
  matchLength: 1024,
  /**
   * RE2 instructions of one pattern. Room for what subscribers write (`^[0-9a-f]{128}$` is
   * 132, an address prefix about 10, an alternation of six 70-character addresses under 450)
   * while one evaluation stays near a millisecond against ids and addresses and under a tenth
   * of a second against the longest processor attribute value (see the header).
   */
  program: 512,
  /** Instructions of one request's regular expressions together, each counted at least `minCharge`. */
  requestProgram: 4096,
  /**
   * Instructions of every subscription's regular expressions on the node together (each
   * counted at least `minCharge`): at most 1,024 patterns, each with a DFA of at most
   * DFA_MEMORY, so at most 64 MiB of DFA states in all; room for each of the default 1,024
   * subscribers to hold a small pattern.
   */
  nodeProgram: 65_536,
  /** What the smallest pattern counts for (it holds a DFA too). */
  minCharge: 64,
};

/**
 * DFA memory of one pattern (re2js's own accounting; its default, 8 MiB, is about 5 MiB of
 * heap when filled). Past it RE2 clears its DFA cache or falls back to its NFA or bounded
 * backtracker, all linear. 64 KiB holds the DFA of `^[0-9a-f]{128}$` (about 35 KiB) and of
 * the address patterns subscribers write.
 */
export const DFA_MEMORY = 64 * 1024;

/**
 * Matching time one subscription may take for one block on the filter thread (checked after
 * each pattern evaluation, so one evaluation more, at most about 80 ms, may run past it).
 * The patterns subscribers write take microseconds a value: a block of 1,000 state changes
 * costs a subscription with a few of them some 10 ms, far below this even on a loaded
 * machine. A subscription over it is ended.
 */
export const MATCH_BUDGET_MS = 250;

const PROGRAM_SLACK = 4;

/**
 * An upper bound on the RE2 program `pattern` compiles to, from its text alone (what RE2's
 * parser computes as the regexp's size, the compiled program being that plus 2): literal
 * characters, classes, escapes and assertions 1; a capturing group its content plus 2;
 * alternatives their sum plus one a bar; `*` +2, `+` and `?` +1; `{n,m}` m copies plus m-n;
 * anything empty 1.
 * What it does not recognise it counts as literal characters, so it only errs upwards (the
 * tests check it against the compiled size over many patterns). Linear in the text.
 */
export function programBound(pattern: string): number {
  interface Frame {
    done: number;
    bars: number;
    cur: number;
    last: number;
    capture: boolean;
  }
  const stack: Frame[] = [];
  let f: Frame = { done: 0, bars: 0, cur: 0, last: 0, capture: false };
  const atom = (size: number): void => {
    f.cur += size;
    f.last = size;
  };
  const repeat = (size: number): void => {
    const at = Math.max(1, size); // as RE2 counts every node: x{0} is an empty match, 1
    f.cur += at - f.last;
    f.last = at;
  };
  /** A group's or the pattern's size: every alternative at least 1 (an empty one is an empty match), one more a bar. */
  const closed = (fr: Frame): number => fr.done + Math.max(1, fr.cur) + fr.bars;
  const n = pattern.length;
  let i = 0;
  /** Index just past a `{…}` at j, or j + 1 when there is no closing brace. */
  const braced = (j: number): number => {
    const end = pattern.indexOf('}', j);
    return end < 0 ? j + 1 : end + 1;
  };
  /** Index just past the escape at j (a backslash). */
  const pastEscape = (j: number): number => {
    const c = pattern[j + 1];
    if ((c === 'x' || c === 'p' || c === 'P') && pattern[j + 2] === '{') return braced(j + 2);
    if (c === 'x') return j + 4;
    if (c === 'p' || c === 'P') return j + 3;
    return j + 2;
  };
  while (i < n) {
    const c = pattern[i];
    if (c === '\\') {
      if (pattern[i + 1] === 'Q') {
        // Literal text up to \E: one instruction a character.
        const end = pattern.indexOf('\\E', i + 2);
        const stop = end < 0 ? n : end;
        for (let k = i + 2; k < stop; k++) atom(1);
        i = end < 0 ? n : end + 2;
        continue;
      }
      atom(1);
      i = pastEscape(i);
      continue;
    }
    if (c === '[') {
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') j++;
      while (j < n && pattern[j] !== ']') {
        if (pattern[j] === '\\') j = pastEscape(j);
        else if (pattern[j] === '[' && pattern[j + 1] === ':') {
          const end = pattern.indexOf(':]', j + 2);
          j = end < 0 ? j + 1 : end + 2;
        } else j++;
      }
      if (j >= n) {
        // Not closed (RE2 refuses it): count every character.
        for (let k = i; k < n; k++) atom(1);
        break;
      }
      atom(1);
      i = j + 1;
      continue;
    }
    if (c === '(') {
      const flags = /^\(\?[a-zA-Z-]*\)/.exec(pattern.slice(i, i + 16));
      if (flags) {
        i += flags[0].length;
        continue;
      }
      const capture =
        pattern[i + 1] !== '?' || pattern.startsWith('(?P<', i) || (pattern.startsWith('(?<', i) && !/^\(\?<[=!]/.test(pattern.slice(i, i + 4)));
      stack.push(f);
      f = { done: 0, bars: 0, cur: 0, last: 0, capture: capture || !/^\(\?[a-zA-Z-]*:/.test(pattern.slice(i, i + 16)) };
      // Skip the group's opening: `(`, `(?:`, `(?i:`, `(?P<name>`, `(?<name>`.
      const open = /^\((?:\?P?<[^>]*>|\?[a-zA-Z-]*:)?/.exec(pattern.slice(i, i + 1100));
      i += open ? open[0].length : 1;
      continue;
    }
    if (c === ')' && stack.length > 0) {
      const size = closed(f) + (f.capture ? 2 : 0);
      f = stack.pop() as Frame;
      atom(size);
      i++;
      continue;
    }
    if (c === '|') {
      f.done += Math.max(1, f.cur);
      f.bars++;
      f.cur = 0;
      f.last = 0;
      i++;
      continue;
    }
    if (c === '*') {
      repeat(2 + f.last);
      i++;
      continue;
    }
    if (c === '+' || c === '?') {
      repeat(1 + f.last);
      i++;
      continue;
    }
    if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i, i + 24));
      if (m) {
        // RE2 refuses counts over 1000; capped here so the arithmetic stays small.
        const min = Math.min(Number(m[1]), 1001);
        const max = m[2] === undefined ? min : m[3] === '' ? -1 : Math.min(Number(m[3]), 1001);
        const sub = f.last;
        repeat(max === -1 ? (min === 0 ? 2 + sub : 1 + min * sub) : max * sub + Math.max(0, max - min));
        i += m[0].length;
        continue;
      }
    }
    atom(1);
    i++;
  }
  // Groups left open (RE2 refuses them): close them as they stand.
  while (stack.length > 0) {
    const size = closed(f) + 2;
    f = stack.pop() as Frame;
    atom(size);
  }
  return closed(f) + PROGRAM_SLACK;
}

/** What a pattern counts for in the caps. */
export const charge = (program: number): number => Math.max(program, LIMITS.minCharge);

const isRegex = (t: number): boolean => t === P.FilterType.REGEX_ANY || t === P.FilterType.REGEX_ALL;

/**
 * The checks a request's filters get on the HTTP thread before it is handed over: the counts,
 * the lengths and the regular expressions' size bounds (linear in the request's size). A
 * string says what is wrong (INVALID_FILTER); otherwise the request's charge, as bounded.
 */
export function precheck(subs: P.EventSubscriptionMsg[]): string | number {
  if (subs.length > LIMITS.subscriptions) return `At most ${LIMITS.subscriptions} subscriptions in one request`;
  let total = 0;
  for (const s of subs) {
    if (s.eventType.length > LIMITS.matchLength) return `An event_type is at most ${LIMITS.matchLength} characters`;
    if (s.filters.length > LIMITS.filters) return `At most ${LIMITS.filters} filters in one subscription`;
    for (const f of s.filters) {
      if (f.matchString.length > LIMITS.matchLength) return `A filter's match_string is at most ${LIMITS.matchLength} characters`;
      if (f.key.length > LIMITS.matchLength) return `A filter's key is at most ${LIMITS.matchLength} characters`;
      if (!isRegex(f.filterType)) continue;
      const bound = programBound(f.matchString);
      if (bound > LIMITS.program) return tooLarge(f.key, bound, true);
      total += charge(bound);
      if (total > LIMITS.requestProgram) return tooMuch(total);
    }
  }
  return total;
}

export const tooLarge = (key: string, size: number, bound: boolean): string =>
  `The regular expression in filter on "${key}" compiles to ${bound ? 'up to ' : ''}${size} RE2 instructions; at most ${LIMITS.program}`;
export const tooMuch = (total: number): string =>
  `The regular expressions of one request compile to ${total} RE2 instructions (each counted at least ${LIMITS.minCharge}); at most ${LIMITS.requestProgram}`;

/** What the filter thread is given of a block: its events' types and attributes, and its changes' addresses. */
export interface MatchBlock {
  /** `sawtooth/block-commit` first, then the events processors added, in order. */
  events: Array<{ eventType: string; attributes: Array<{ key: string; value: string }> }>;
  /** The addresses of the block's changes, in the order the state-delta events carry them. */
  addresses: string[];
}

/** What one subscriber gets of one block: the indices of the events sent, and of the changes of each state-delta event. */
export interface Selection {
  events: number[];
  deltas: number[][];
}

export const STATE_DELTA = 'sawtooth/state-delta';
