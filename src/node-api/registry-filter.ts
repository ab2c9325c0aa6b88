/**
 * The registry list `filter`: a JSON object keyed by metadata
 * property; each value is one `[operator, value]` pair (upstream's wire form) or a list
 * of `{"operator","value"}` objects (the spec's description form; all must hold).
 * Operators = != > < >= <= compare strings; a node without the property passes only !=.
 */
import { bad } from './body.js';
import { show } from '../codec/show.js';

const OPS = ['=', '!=', '>', '<', '>=', '<='] as const;
type Op = (typeof OPS)[number];

export interface Predicate {
  key: string;
  op: Op;
  value: string;
}

function predicate(key: string, op: unknown, value: unknown): Predicate {
  if (typeof op !== 'string' || !(OPS as readonly string[]).includes(op)) {
    throw bad(`Invalid predicate: ${show(op, 20)} is not a valid operator (use one of ${OPS.join(' ')})`);
  }
  if (typeof value !== 'string') throw bad(`Invalid filter value passed: the value for "${key}" must be a string`);
  return { key, op: op as Op, value };
}

export function parseFilter(raw: string): Predicate[] {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    throw bad(`Invalid filter value passed: ${raw.slice(0, 100)}. Error: ${(err as Error).message.slice(0, 100)}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw bad('Invalid filter value passed: expected a JSON object keyed by metadata property');
  }
  const out: Predicate[] = [];
  for (const [key, cond] of Object.entries(v)) {
    if (Array.isArray(cond) && cond.length === 2 && typeof cond[0] === 'string' && !isCondObject(cond[0])) {
      out.push(predicate(key, cond[0], cond[1]));
    } else if (Array.isArray(cond) && cond.length > 0 && cond.every(isCondObject)) {
      for (const c of cond) out.push(predicate(key, c.operator, c.value));
    } else {
      throw bad(`Invalid filter value passed: "${key}" must be ["<operator>", "<value>"] or [{"operator", "value"}, ...]`);
    }
  }
  return out;
}

function isCondObject(c: unknown): c is { operator: unknown; value: unknown } {
  return typeof c === 'object' && c !== null && !Array.isArray(c) && 'operator' in c;
}

function holds(p: Predicate, actual: string | undefined): boolean {
  if (actual === undefined) return p.op === '!=';
  switch (p.op) {
    case '=':
      return actual === p.value;
    case '!=':
      return actual !== p.value;
    case '>':
      return actual > p.value;
    case '<':
      return actual < p.value;
    case '>=':
      return actual >= p.value;
    case '<=':
      return actual <= p.value;
  }
}

export function matches(preds: Predicate[], metadata: Record<string, string>): boolean {
  return preds.every((p) => holds(p, Object.hasOwn(metadata, p.key) ? metadata[p.key] : undefined));
}
