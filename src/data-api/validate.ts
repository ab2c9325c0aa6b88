/**
 * Request bodies of the data API: JSON parsing and declarative shape checks. Every
 * failure is a 400 whose message names the field by its path (`data[2].owner`), so bad
 * input is refused before anything is built or submitted.
 */
import type { Req } from '../http/server.js';
import type { ApiError } from '../http/api-error.js';
import { idFits, MAX_ID_BYTES } from '../http/ids.js';
import { show } from '../codec/show.js';
import { dataErrors } from './errors.js';

export type Obj = Record<string, unknown>;

export function bad(message: string): ApiError {
  return dataErrors.invalidBody({ reason: message });
}

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `a.b`, `a[0]`, or just `b` at the top. */
export function at(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

export function parseJsonBody(req: Req): unknown {
  if (req.body.length === 0) throw bad('A JSON request body is required');
  try {
    return JSON.parse(req.body.toString('utf8')) as unknown;
  } catch (err) {
    throw bad(`Malformed JSON body: ${(err as Error).message.slice(0, 200)}`);
  }
}

export function objectBody(req: Req): Obj {
  const v = parseJsonBody(req);
  if (!isObj(v)) throw bad('The request body must be a JSON object');
  return v;
}

/** Most records one create call takes (they go into one batch). */
export const MAX_ITEMS = 1000;

/** The items of a create body `{"data": [records]}`. */
export function dataItems(req: Req): unknown[] {
  const body = objectBody(req);
  for (const k of Object.keys(body)) if (k !== 'data') throw bad(`\`${k}\` is not a known field (the body is {"data": [records]})`);
  const data = body.data;
  if (data === undefined || data === null) throw bad('`data` is required');
  if (!Array.isArray(data)) throw bad('`data` must be an array of records');
  if (data.length === 0) throw bad('`data` must not be empty');
  if (data.length > MAX_ITEMS) throw bad(`\`data\` holds more than ${MAX_ITEMS} records`);
  return data;
}

export type Kind = 'string' | 'boolean' | 'integer' | 'strings' | 'array' | 'object' | 'any';

export interface Field {
  kind: Kind;
  required?: boolean;
  /** Strings: refuse "". */
  nonEmpty?: boolean;
}

export type Shape = Record<string, Kind | Field>;

const KIND_TEXT: Record<Kind, string> = {
  string: 'a string',
  boolean: 'a boolean',
  integer: 'a non-negative integer',
  strings: 'an array of strings',
  array: 'an array',
  object: 'an object',
  any: 'a value',
};

function kindOk(kind: Kind, v: unknown): boolean {
  switch (kind) {
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'integer':
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
    case 'strings':
      return Array.isArray(v) && v.every((s) => typeof s === 'string');
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isObj(v);
    default:
      return true;
  }
}

/** A shape as a map without a prototype, so `constructor`, `__proto__` etc. are unknown names. */
const known = new WeakMap<Shape, Map<string, Kind | Field>>();
function fieldsOf(shape: Shape): Map<string, Kind | Field> {
  let m = known.get(shape);
  if (!m) {
    m = new Map(Object.entries(shape));
    known.set(shape, m);
  }
  return m;
}

/**
 * Checks `v` against `shape`: an object, no unknown fields, required fields present and
 * every field of the right kind. `null` counts as absent. Returns `v` without nulls.
 * Only own properties count, looked up in a map: a body's `__proto__` or `constructor`
 * is an unknown field, never a way to reach (or fill a required field from) a prototype.
 */
export function checkShape(v: unknown, shape: Shape, path: string): Obj {
  if (!isObj(v)) throw bad(path === '' ? 'The request body must be a JSON object' : `\`${path}\` must be an object`);
  const fields = fieldsOf(shape);
  const out: Obj = {};
  for (const [k, val] of Object.entries(v)) {
    const spec = fields.get(k);
    if (spec === undefined) throw bad(`\`${at(path, k)}\` is not a known field`);
    if (val === null || val === undefined) continue;
    const f: Field = typeof spec === 'string' ? { kind: spec } : spec;
    if (!kindOk(f.kind, val)) throw bad(`\`${at(path, k)}\` must be ${KIND_TEXT[f.kind]}`);
    if (f.nonEmpty && val === '') throw bad(`\`${at(path, k)}\` must not be empty`);
    out[k] = val;
  }
  for (const [k, spec] of fields) {
    if (typeof spec !== 'string' && spec.required && !Object.hasOwn(out, k)) throw bad(`\`${at(path, k)}\` is required`);
  }
  return out;
}

export const reqString: Field = { kind: 'string', required: true, nonEmpty: true };

/** Refuses the same id twice in one request. */
export function uniqueIn(seen: Set<string>, id: string, path: string): void {
  if (seen.has(id)) throw bad(`\`${path}\`: ${id} appears more than once in this request`);
  seen.add(id);
}

/** A path parameter must agree with the same field in the body when both are given. */
export function samePath(o: Obj, key: string, pathValue: string, path: string): void {
  const v = Object.hasOwn(o, key) ? o[key] : undefined;
  if (v !== undefined && v !== pathValue) throw bad(`\`${at(path, key)}\` (${show(v)}) does not match the path (${pathValue})`);
}

/** An id that becomes a read-model key and a path segment: at most MAX_ID_BYTES (src/http/ids.ts). */
export function checkId(id: string, path: string): void {
  if (!idFits(id)) throw bad(`\`${path}\` is longer than ${MAX_ID_BYTES} bytes (UTF-8)`);
}
