/** Parsing and validation of the ledger gateway's query parameters. */
import type { Req } from '../http/server.js';
import { waitQuery } from '../http/wait.js';
import { isHexId } from '../codec/hex.js';
import { checkHead } from './chain.js';
import { ledgerError, LedgerErrorCode } from './errors.js';

/** A state address or address prefix: whole bytes of lowercase hex, at most 35 of them. */
export const ADDRESS_PREFIX_RE = /^([0-9a-f]{2}){0,35}$/;
export const MAX_LIMIT = 1000;
export const DEFAULT_LIMIT = 1000;
const INT32_MAX = 2 ** 31 - 1;

export function checkIds(ids: string[]): string[] {
  for (const id of ids) if (!isHexId(id)) throw ledgerError(LedgerErrorCode.InvalidResourceId, id);
  return ids;
}

/** An integer as Python's int() reads one: optional blanks and sign, digits with single underscores between. */
function parseIntLike(s: string): number | null {
  const m = /^\s*([+-]?)(\d+(?:_\d+)*)\s*$/.exec(s);
  if (!m) return null;
  const n = Number(m[2]!.replaceAll('_', ''));
  return m[1] === '-' ? -n : n;
}

export interface Paging {
  /** The limit the client sent (echoed in `paging.limit`), or null. */
  clientLimit: number | null;
  /** The start the client sent (echoed in `paging.start`), or null. */
  clientStart: string | null;
  /** The limit applied: the client's, capped at MAX_LIMIT, else DEFAULT_LIMIT. */
  limit: number;
  /** The position marker to start at; an empty `start` means none. */
  start: string | undefined;
}

/** `limit` and `start` (400 code 53 for a limit that is not a positive integer). */
export function parsePaging(req: Req): Paging {
  const l = req.query.get('limit');
  let clientLimit: number | null = null;
  if (l !== null) {
    const n = parseIntLike(l);
    if (n === null || n <= 0 || n > INT32_MAX) throw ledgerError(LedgerErrorCode.InvalidCountQuery, `: got "${l}"`);
    clientLimit = n;
  }
  const start = req.query.get('start');
  return {
    clientLimit,
    clientStart: start,
    limit: Math.min(clientLimit ?? DEFAULT_LIMIT, MAX_LIMIT),
    start: start === null || start === '' ? undefined : start,
  };
}

/**
 * The `reverse` query: absent or "false" → normal order; empty → reversed; otherwise the
 * value names sort keys, and only the list's own key is accepted (400 code 57).
 */
export function parseReverse(req: Req, sortKey: 'block_num' | 'default'): boolean {
  const r = req.query.get('reverse');
  if (r === null || r.toLowerCase() === 'false') return false;
  if (r === '' || r === sortKey) return true;
  throw ledgerError(LedgerErrorCode.InvalidSortQuery, `: got "${r}"`);
}

/** The `id` filter of the list routes: undefined when absent, else every id checked (400 code 60). */
export function filterIds(req: Req): string[] | undefined {
  const ids = req.query.get('id');
  return ids === null ? undefined : checkIds(ids.split(','));
}

/** A POST body of ids: Content-Type application/json (else `wrongType`), a non-empty JSON array of strings (else `bad`). */
export function idArrayBody(req: Req, wrongType: LedgerErrorCode, bad: LedgerErrorCode): string[] {
  const ct = req.headers['content-type'] ?? '';
  if (ct.split(';')[0]!.trim() !== 'application/json') throw ledgerError(wrongType);
  let v: unknown;
  try {
    v = JSON.parse(req.body.toString('utf8'));
  } catch {
    throw ledgerError(bad, ': the body is not valid JSON');
  }
  if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'string')) throw ledgerError(bad);
  return v as string[];
}

/** The `id` query of /batch_statuses and /receipts: required (else `missing`), comma-separated. */
export function idQuery(req: Req, missing: LedgerErrorCode): string[] {
  const id = req.query.get('id');
  if (id === null) throw ledgerError(missing);
  return id.split(',');
}

/** The query of the block, batch and transaction lists, as far as it is read before the head is looked up. */
export interface ListQuery {
  paging: Paging;
  /** The `head` as sent (its form checked). */
  head: string | null;
  /** The `id` filter, each id checked; undefined when absent. */
  ids: string[] | undefined;
}

/** `limit`/`start`, `head` and `id` of a list route, in that order (`reverse` is read after the head is found). */
export function listQuery(req: Req): ListQuery {
  const paging = parsePaging(req);
  const head = req.query.get('head');
  checkHead(head, false);
  return { paging, head, ids: filterIds(req) };
}

/** The ids and `wait` of GET /batch_statuses and GET /receipts: `missing` when there is no `id`, 400 code 60 for a malformed one. */
export function idsAndWait(req: Req, missing: LedgerErrorCode): { ids: string[]; wait: number } {
  return { ids: checkIds(idQuery(req, missing)), wait: waitQuery(req) };
}

/** Block paging markers: "0x" + 16 hex digits of the block number. */
export function blockMarker(num: number): string {
  return `0x${num.toString(16).padStart(16, '0')}`;
}

export function parseBlockMarker(s: string): number | null {
  if (!/^0x[0-9a-fA-F]{1,16}$/.test(s)) return null;
  const n = Number.parseInt(s.slice(2), 16);
  return Number.isSafeInteger(n) ? n : null;
}
