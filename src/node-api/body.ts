/**
 * Request body parsing for the node API: JSON only, with a 400 `{message}` that names the
 * offending field for malformed JSON, wrong types and missing fields.
 */
import type { Req } from '../http/server.js';
import type { ApiError } from '../http/api-error.js';
import { nodeErrors } from './errors.js';

export type JsonObject = Record<string, unknown>;

export function bad(message: string): ApiError {
  return nodeErrors.invalidBody({ reason: message });
}

/** Parses the body as JSON; empty or malformed bodies are a 400. */
export function parseJson(req: Req): unknown {
  if (req.body.length === 0) throw bad('Request body is required (JSON)');
  try {
    return JSON.parse(req.body.toString('utf8')) as unknown;
  } catch (err) {
    throw bad(`Malformed JSON body: ${(err as Error).message.slice(0, 200)}`);
  }
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function objectBody(req: Req): JsonObject {
  const v = parseJson(req);
  if (!isObject(v)) throw bad('Request body must be a JSON object');
  return v;
}

export interface StringRule {
  /** Maximum length in characters (default 1024). */
  max?: number;
  /** Allow "" (default false). */
  empty?: boolean;
  pattern?: RegExp;
  patternHelp?: string;
}

function checkString(v: unknown, name: string, rule: StringRule): string {
  if (typeof v !== 'string') throw bad(`Field "${name}" must be a string`);
  if (!rule.empty && v.length === 0) throw bad(`Field "${name}" must not be empty`);
  const max = rule.max ?? 1024;
  if (v.length > max) throw bad(`Field "${name}" is longer than ${max} characters`);
  if (rule.pattern && !rule.pattern.test(v)) throw bad(`Field "${name}" ${rule.patternHelp ?? 'has an invalid format'}`);
  return v;
}

/** A body field: own properties only, so nothing is read through a prototype (`constructor`, `__proto__`). */
export function field(o: JsonObject, name: string): unknown {
  return Object.hasOwn(o, name) ? o[name] : undefined;
}

export function reqString(o: JsonObject, name: string, rule: StringRule = {}, where = ''): string {
  const v = field(o, name);
  if (v === undefined || v === null) throw bad(`Missing field "${where}${name}"`);
  return checkString(v, where + name, rule);
}

export function optString(o: JsonObject, name: string, rule: StringRule = {}, where = ''): string | undefined {
  const v = field(o, name);
  if (v === undefined || v === null) return undefined;
  return checkString(v, where + name, rule);
}

export function reqArray(o: JsonObject, name: string, max = 1000): unknown[] {
  const v = field(o, name);
  if (v === undefined || v === null) throw bad(`Missing field "${name}"`);
  if (!Array.isArray(v)) throw bad(`Field "${name}" must be an array`);
  if (v.length > max) throw bad(`Field "${name}" has more than ${max} entries`);
  return v;
}

export function reqStringArray(o: JsonObject, name: string, rule: StringRule = {}, max = 1000): string[] {
  return reqArray(o, name, max).map((v, i) => checkString(v, `${name}[${i}]`, rule));
}

/** No control characters (names shown in lists and logs). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
export const PRINTABLE = /^[^\u0000-\u001f\u007f]*$/;
