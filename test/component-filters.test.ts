/**
 * The event filter engine and the filter thread's bookkeeping, in process (the tests over
 * real sockets are component-events.test.ts and component-events-hostile.test.ts): the size
 * bound read from a pattern's text never falls below what RE2 compiles it to; RE2's matching
 * keeps upstream's semantics (a match anywhere, ANY/ALL, the selection's order); the caps,
 * the replacement and the dropping of subscriptions; a block or a GET past its budget.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { RE2Set } from 're2js';
import { programBound, precheck, LIMITS, DFA_MEMORY, type MatchBlock } from '../src/component/filters.js';
import { compileSubscriptions, compilePattern, select, OverBudget, type Subscription } from '../src/component/filter-engine.js';
import { FilterThread } from '../src/component/filter-thread.js';
import * as P from '../src/component/proto.js';

const T = P.FilterType;
const never = { deadline: Number.POSITIVE_INFINITY };

/** A small deterministic generator of RE2 patterns (groups, alternations, classes, escapes, repeats). */
function patterns(count: number, seed: number): string[] {
  let s = seed;
  const rnd = (n: number): number => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s % n;
  };
  const atoms = [
    'a',
    'b',
    '.',
    '\\d',
    '[0-9a-f]',
    '[^x]',
    '\\pL',
    '\\p{Greek}',
    '\\x{41}',
    '\\x41',
    '\\Qa.b\\E',
    '^',
    '$',
    '\\b',
    '[[:alpha:]]',
    '[]a]',
    '[\\]x]',
    '(?i)k',
    '\\z',
    '\\012',
  ];
  const opens = ['(', '(?:', '(?P<n>', '(?<m>', '(?i:', '(?s-i:'];
  const gen = (depth: number): string => {
    let out = '';
    for (let i = 1 + rnd(4); i > 0; i--) {
      let a =
        depth > 0 && rnd(3) === 0
          ? `${opens[rnd(opens.length)]}${gen(depth - 1)}${rnd(4) === 0 ? `|${gen(depth - 1)}` : ''})`
          : (atoms[rnd(atoms.length)] as string);
      const q = rnd(9);
      if (q === 1) a += '*';
      else if (q === 2) a += '+';
      else if (q === 3) a += '?';
      else if (q === 4) a += `{${rnd(12)}}`;
      else if (q === 5) a += `{${rnd(5)},${5 + rnd(10)}}`;
      else if (q === 6) a += `{${rnd(6)},}`;
      else if (q === 7) a += '*?';
      out += a;
    }
    return out;
  };
  return Array.from({ length: count }, () => gen(3));
}

t.test('the size bound from the text is never below the compiled program', async (t) => {
  let checked = 0;
  let worst = 0;
  for (const p of [
    ...patterns(3000, 7),
    ...patterns(3000, 11),
    '',
    '|',
    'a|',
    '()',
    '(?i)',
    '[0-9a-f]{1000}',
    'x{2,}',
    'x{0,}',
    '(x){3}',
    'x{0,1000}',
    '(?:[0-9a-f]?){250}',
    '\\Qno end',
    '(?P<n>a)',
    '(?i:abc){9}',
    '[[:alpha:][:digit:]]{40}',
  ]) {
    const set = new RE2Set(RE2Set.UNANCHORED, 0, 65536);
    try {
      set.add(p);
      set.compile();
    } catch {
      continue; // RE2 refuses it: nothing is compiled
    }
    const real = set.prog.numInst();
    const bound = programBound(p);
    if (bound < real) t.fail(`${JSON.stringify(p)}: bound ${bound} under the compiled ${real}`);
    worst = Math.max(worst, bound / real);
    checked++;
  }
  t.ok(checked > 1500, `${checked} patterns compiled and checked`);
  t.ok(worst < 4, `the bound errs upwards by at most ${worst.toFixed(2)}×`);
  // What RE2 refuses is bounded too, from the text (nothing is compiled before the bound says it may be).
  t.equal(programBound(`(${'abcdefghij'.repeat(100)}){1000}`), 1002004);
  t.ok(programBound('[0-9a-f') >= 8, 'a class never closed counts its characters');
  t.ok(programBound('((a)') >= 5, 'groups never closed count');
  t.ok(programBound(')a') >= 2, 'a stray parenthesis counts as a character');
  t.equal(programBound('a{99999}'), 1001 + 4, 'counts past RE2 maximum are capped in the arithmetic');
  t.ok(programBound('\\x{41') >= 4 && programBound('\\p{Greek') >= 4, 'an escape never closed counts its characters');
});

t.test('precheck: counts, lengths, the bounds of one request', async (t) => {
  const sub = (filters: P.EventFilterMsg[], eventType = 'x'): P.EventSubscriptionMsg => ({ eventType, filters });
  const f = (matchString: string, filterType = T.REGEX_ANY, key = 'k'): P.EventFilterMsg => ({ key, matchString, filterType });
  t.equal(
    precheck([sub([f('a'), f('b', T.SIMPLE_ANY)])]),
    LIMITS.minCharge,
    'a regular expression counts at least minCharge; a simple filter nothing',
  );
  t.match(precheck([sub([], 'e'.repeat(1025))]), /An event_type is at most 1024 characters/);
  t.match(precheck([sub([f('a'.repeat(1025))])]), /match_string is at most 1024/);
  t.match(precheck([sub([f('a', T.SIMPLE_ANY, 'k'.repeat(1025))])]), /key is at most 1024/);
  t.match(precheck([sub([f('[0-9a-f]{600}')])]), /compiles to up to 604 RE2 instructions; at most 512/);
});

t.test('matching: RE2 as upstream matches with re.search; ANY, ALL, SIMPLE; the selection', async (t) => {
  const compile = (subs: P.EventSubscriptionMsg[]): Subscription[] => {
    const c = compileSubscriptions(subs);
    if (typeof c === 'string') throw new Error(c);
    return c.subs;
  };
  const block: MatchBlock = {
    events: [
      {
        eventType: 'sawtooth/block-commit',
        attributes: [
          { key: 'block_id', value: 'ab'.repeat(64) },
          { key: 'block_num', value: '7' },
        ],
      },
      {
        eventType: 'tally/added',
        attributes: [
          { key: 'key', value: 'apples' },
          { key: 'key', value: 'pears' },
        ],
      },
      { eventType: 'tally/added', attributes: [] },
    ],
    addresses: ['1cf126aa', '000000bb', '1cf126cc'],
  };
  const pick = (subs: P.EventSubscriptionMsg[]): object => select(block, compile(subs), never);
  const one = (filterType: number, matchString: string, key = 'key'): P.EventSubscriptionMsg[] => [
    { eventType: 'tally/added', filters: [{ key, matchString, filterType }] },
  ];
  t.same(pick(one(T.REGEX_ANY, 'pp')), { events: [1], deltas: [] }, 'a match anywhere in the value (re.search)');
  t.same(pick(one(T.REGEX_ANY, '^pp')), { events: [], deltas: [] }, 'anchored at the start');
  t.same(pick(one(T.REGEX_ALL, 'p')), { events: [1, 2], deltas: [] }, 'ALL: every value (and an event without the key passes)');
  t.same(pick(one(T.REGEX_ALL, 'pear')), { events: [2], deltas: [] });
  t.same(pick(one(T.SIMPLE_ANY, 'pears')), { events: [1], deltas: [] });
  t.same(pick(one(T.SIMPLE_ALL, 'pears')), { events: [2], deltas: [] });
  t.same(pick(one(T.REGEX_ANY, '(?P<fruit>apple|pear)s$')), { events: [1], deltas: [] }, "Python's named groups");
  t.same(pick(one(T.REGEX_ANY, '(?i)APPLES')), { events: [1], deltas: [] }, 'flags');
  t.same(pick(one(T.REGEX_ANY, '^([a-z]+)+z$')), { events: [], deltas: [] }, 'nested quantifiers: no match, no backtracking');
  t.same(
    pick([
      { eventType: 'sawtooth/block-commit', filters: [{ key: 'block_id', matchString: '^[0-9a-f]{128}$', filterType: T.REGEX_ANY }] },
      { eventType: 'sawtooth/state-delta', filters: [{ key: 'address', matchString: '^1cf126', filterType: T.REGEX_ANY }] },
      { eventType: 'sawtooth/state-delta', filters: [{ key: 'address', matchString: 'b$', filterType: T.REGEX_ALL }] },
      { eventType: 'sawtooth/state-delta', filters: [{ key: 'address', matchString: 'zz', filterType: T.REGEX_ALL }] },
      { eventType: 'tally/added', filters: [] },
    ]),
    { events: [0, 1, 2], deltas: [[0, 2], [1]] },
    'each event once, in order; one delta per state-delta subscription that has changes',
  );
  t.match(compileSubscriptions(one(T.FILTER_TYPE_UNSET, 'x')), /Invalid filter type 0/);
  t.match(
    compileSubscriptions(one(T.REGEX_ANY, '\\8')),
    /^Invalid regular expression in filter on "key": error parsing regexp: invalid escape sequence/,
  );
  const subs = compile(one(T.REGEX_ANY, 'zzz'));
  let thrown: unknown;
  try {
    select(block, subs, { deadline: 0 });
  } catch (err) {
    thrown = err;
  }
  t.ok(thrown instanceof OverBudget, 'past its deadline, a selection stops after the evaluation that ran over');
  t.same(select(block, compile(one(T.SIMPLE_ANY, 'zzz')), { deadline: 0 }), { events: [], deltas: [] }, 'simple filters take no budget');
});

t.test('the filter thread: the node cap, replacing, dropping, budgets', async (t) => {
  const ft = new FilterThread();
  const eight = [{ eventType: 'x', filters: Array.from({ length: 8 }, () => ({ key: 'k', matchString: '[0-9a-f]{500}', filterType: T.REGEX_ANY })) }];
  for (let req = 1; req <= 16; req++) t.same(ft.handle({ op: 'subscribe', req, subs: eight, replaces: null }), { req, ok: true });
  t.equal(ft.charged, 16 * 8 * 502);
  const full = ft.handle({ op: 'subscribe', req: 17, subs: eight, replaces: null });
  t.match(full, { req: 17, error: /event filters are full/ });
  t.same(ft.handle({ op: 'subscribe', req: 18, subs: eight, replaces: 3 }), { req: 18, ok: true }, 'a replacement counts once');
  t.equal(ft.subscriptions, 16);
  t.match(
    ft.handle({
      op: 'subscribe',
      req: 19,
      subs: [{ eventType: 'x', filters: [{ key: 'k', matchString: '(', filterType: T.REGEX_ANY }] }],
      replaces: 18,
    }),
    {
      error: /missing closing \)/,
    },
  );
  t.equal(ft.subscriptions, 16, 'a refused replacement leaves the subscription as it was');
  ft.handle({ op: 'drop', set: 18 });
  ft.handle({ op: 'drop', set: 18 });
  t.equal(ft.subscriptions, 15, 'dropped (twice: once)');
  t.equal(ft.handle({ op: 'close' }), undefined);

  const block: MatchBlock = { events: [{ eventType: 'x', attributes: [{ key: 'k', value: 'ab'.repeat(40) }] }], addresses: [] };
  t.same(ft.handle({ op: 'match', req: 20, sets: [1, 18], blocks: [block, block] }), {
    req: 20,
    results: [
      {
        selections: [
          { events: [], deltas: [] },
          { events: [], deltas: [] },
        ],
      },
      null,
    ],
  });
  const slow = new FilterThread({ blockMs: -1, getMs: -1 });
  slow.handle({ op: 'subscribe', req: 1, subs: eight, replaces: null });
  slow.handle({ op: 'subscribe', req: 2, subs: [{ eventType: 'x', filters: [] }], replaces: null });
  const r = slow.handle({ op: 'match', req: 3, sets: [1, 2], blocks: [block, block] });
  t.match(
    r,
    { req: 3, results: [{ selections: [], over: { ms: Number } }, { selections: [{ events: [0] }, { events: [0] }] }] },
    'over its budget on the first block',
  );
  t.equal(slow.subscriptions, 1, 'and dropped by the thread');
  t.same(slow.handle({ op: 'get', req: 4, subs: eight, blocks: [block] }), { req: 4, error: 'Matching took more than -1 ms' });
  t.same(slow.handle({ op: 'get', req: 5, subs: [{ eventType: 'x', filters: [] }], blocks: [block] }), {
    req: 5,
    selections: [{ events: [0], deltas: [] }],
  });
  t.match(
    slow.handle({
      op: 'get',
      req: 6,
      subs: [{ eventType: 'x', filters: [{ key: 'k', matchString: '(?=x)', filterType: T.REGEX_ANY }] }],
      blocks: [],
    }),
    {
      error: /lookahead/,
    },
  );
});

t.test("a pattern's DFA stays within DFA_MEMORY (re2js's own is 8 MiB)", async (t) => {
  // Exponentially many DFA states: the budget runs out, RE2 resets its cache or falls back to its NFA.
  const re = compilePattern('[0-9a-f]*[0-9][0-9a-f]{20}[g-z]');
  const dfa = re.re2Input.lazyDFA;
  t.equal(dfa.maxMem, DFA_MEMORY, 'the bounded DFA is the one the pattern uses');
  let lowest = dfa.memBudget;
  for (let i = 0; i < 40; i++) {
    t.notOk(re.test(randomBytes(2048).toString('hex')), 'no match (no g-z)');
    lowest = Math.min(lowest, dfa.memBudget);
  }
  t.equal(re.re2Input.lazyDFA, dfa, 'still that DFA');
  t.ok(lowest >= 0 && lowest < DFA_MEMORY / 2, `its budget was used (${DFA_MEMORY - lowest} bytes at most) and never overdrawn`);
  // A digit, then 20 hex characters, then one of g-z (a random tail had no digit in its place 3 times in 8).
  t.ok(re.test(`${randomBytes(40).toString('hex')}7${'ab'.repeat(10)}z`), 'and it still matches');
});
