/** Parsing and validation of interface C query parameters. */
import type { Req } from '../http/server.js';
import { ledgerError } from './errors.js';

export const ID_RE = /^[0-9a-f]{128}$/;
export const ADDRESS_PREFIX_RE = /^([0-9a-f]{2}){0,35}$/;
/** Upstream answers a `wait` without an integer value just under its 300 s timeout. */
export const DEFAULT_WAIT_SECONDS = 285;
export const MAX_LIMIT = 1000;
export const DEFAULT_LIMIT = 1000;

export function checkIds(ids: string[]): string[] {
  for (const id of ids) if (!ID_RE.test(id)) throw ledgerError(60, id);
  return ids;
}

/** Seconds to wait: 0 when absent or "false"; the integer given; else just under the server timeout. */
export function parseWait(req: Req): number {
  const w = req.query.get('wait');
  if (w === null || w.toLowerCase() === 'false') return 0;
  if (/^\d+$/.test(w)) return Math.min(Number(w), DEFAULT_WAIT_SECONDS);
  return DEFAULT_WAIT_SECONDS;
}

export interface Paging {
  /** The limit the client sent, or null. */
  clientLimit: number | null;
  clientStart: string | null;
  limit: number;
  start: string | undefined;
  reverse: boolean;
}

export function parsePaging(req: Req, sortKey: string): Paging {
  const l = req.query.get('limit');
  let clientLimit: number | null = null;
  if (l !== null) {
    if (!/^\d+$/.test(l) || Number(l) <= 0) throw ledgerError(53);
    clientLimit = Number(l);
  }
  const start = req.query.get('start');
  const r = req.query.get('reverse');
  let reverse = false;
  if (r !== null) {
    if (r === '') reverse = true;
    else if (r.toLowerCase() === 'false') reverse = false;
    else if (r.split(',').length === 1 && r === sortKey) reverse = true;
    else throw ledgerError(57);
  }
  return {
    clientLimit,
    clientStart: start,
    limit: Math.min(clientLimit ?? DEFAULT_LIMIT, MAX_LIMIT),
    start: start ?? undefined,
    reverse,
  };
}

/** Block paging markers: "0x" + 16 hex digits of the block number. */
export function blockMarker(num: number): string {
  return '0x' + num.toString(16).padStart(16, '0');
}

export function parseBlockMarker(s: string): number | null {
  if (!/^0x[0-9a-fA-F]{1,16}$/.test(s)) return null;
  const n = Number.parseInt(s.slice(2), 16);
  return Number.isSafeInteger(n) ? n : null;
}
