/**
 * What one event filter evaluation can cost (the figures in src/component/filters.ts): the
 * worst patterns of at most LIMITS.program RE2 instructions found here (each built to keep
 * many NFA threads alive or to blow up RE2's DFA; none has a literal RE2 can look for first)
 * against the values that can reach a filter: a block id (128 hex characters), a state
 * address (70) and a processor event attribute of the longest value the endpoint accepts
 * (EVENT_VALUE_LIMIT, 4,096). Each pattern is compiled afresh for each value (an empty DFA:
 * the worst case), best and worst of REPS runs; the best of REPS compile times; also the
 * patterns subscribers write (warm). Prints one JSON line. `node --import tsx bench/filter-cost.ts`.
 */
import { randomBytes } from 'node:crypto';
import { LIMITS, type MatchBlock } from '../src/component/filters.js';
import { compileSubscriptions, select, type Subscription } from '../src/component/filter-engine.js';
import { EVENT_VALUE_LIMIT } from '../src/component/state-requests.js';
import * as P from '../src/component/proto.js';
import { envInt } from './lib/env.js';

const REPS = envInt('REPS', 5, 1);
const hex = (n: number): string =>
  randomBytes(Math.ceil(n / 2))
    .toString('hex')
    .slice(0, n);

/** Patterns of about LIMITS.program instructions (the cap) that RE2 cannot shortcut. */
const HOSTILE: Record<string, string> = {
  optionalRun: '(?:[0-9a-f]?){250}[g-z]',
  classRun: '[0-9a-f]{500}[g-z]',
  dfaBlowUp: '[0-9a-f]*[0-9][0-9a-f]{495}[g-z]',
  alternatives: '(?:[0-9]|[a-f]|[0-9a-f]){100}[g-z]',
  unicodeClasses: '(?:\\pL|\\pN|\\pP){100}[g-z]',
  backtracking: '^([0-9a-f]+)+z$',
  /** 1,017 characters (near the 1,024 a match_string may have) of optional classes. */
  longText: `(?:${'[0-9a-f]?'.repeat(112)})[g-z]`,
};
const TYPICAL: Record<string, string> = {
  prefix: '^1cf126',
  blockId: '^[0-9a-f]{128}$',
  address: '^1cf126[0-9a-f]{64}$',
};

function compile(pattern: string): { sub: Subscription; program: number } {
  const c = compileSubscriptions([{ eventType: 'x', filters: [{ key: 'k', matchString: pattern, filterType: P.FilterType.REGEX_ANY }] }]);
  if (typeof c === 'string') throw new Error(c);
  return { sub: c.subs[0] as Subscription, program: c.charge };
}

const evalMs = (pattern: string, value: string, fresh: boolean): number[] => {
  let compiled = compile(pattern);
  const block = { events: [{ eventType: 'x', attributes: [{ key: 'k', value }] }], addresses: [] };
  const times: number[] = [];
  for (let i = 0; i < REPS; i++) {
    if (fresh) compiled = compile(pattern);
    const t0 = performance.now();
    select(block, [compiled.sub], { deadline: Number.POSITIVE_INFINITY });
    times.push(performance.now() - t0);
  }
  return [Math.min(...times), Math.max(...times)].map((t) => Math.round(t * 1000) / 1000);
};

const lengths = { address: 70, blockId: 128, eventValue: EVENT_VALUE_LIMIT };
const out: Record<string, unknown> = { bench: 'filter-cost', reps: REPS, programLimit: LIMITS.program };
for (const [name, pattern] of Object.entries(HOSTILE)) {
  let compileMs = Number.POSITIVE_INFINITY;
  let program = 0;
  for (let i = 0; i < REPS; i++) {
    const t0 = performance.now();
    program = compile(pattern).program;
    compileMs = Math.min(compileMs, Math.round((performance.now() - t0) * 1000) / 1000);
  }
  const ms: Record<string, number[]> = {};
  for (const [what, n] of Object.entries(lengths)) ms[what] = evalMs(pattern, hex(n), true);
  out[name] = { program, compileMs, freshEvalMs: ms };
}
for (const [name, pattern] of Object.entries(TYPICAL)) {
  // Random addresses and ids, some under the intkey prefix: the DFA warm, as it is after a few blocks.
  const values = Array.from({ length: 2000 }, (_, i) => (i % 2 === 0 ? `1cf126${hex(64)}` : hex(name === 'blockId' ? 128 : 70)));
  const { sub } = compile(pattern);
  const block = (v: string): MatchBlock => ({ events: [{ eventType: 'x', attributes: [{ key: 'k', value: v }] }], addresses: [] });
  for (const v of values) select(block(v), [sub], { deadline: Number.POSITIVE_INFINITY });
  const t0 = performance.now();
  for (const v of values) select(block(v), [sub], { deadline: Number.POSITIVE_INFINITY });
  out[name] = { warmUsPerValue: Math.round(((performance.now() - t0) / values.length) * 1e6) / 1000 };
}
process.stdout.write(`${JSON.stringify(out)}\n`);
