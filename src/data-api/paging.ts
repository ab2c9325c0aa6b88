/**
 * Offset/limit paging of the data API: offset default 0, limit default 100 (1..1000),
 * `total` the size of the whole collection, and the spec's paging object: relative links
 * (path and query), `prev`/`next` left out where there is none (upstream Grid sends
 * absolute links and `null`; `next` is always offset + limit, where upstream clamped it
 * to the last page's offset). Links keep the request's other query parameters, then
 * `limit`, `service_id`, `offset`, as upstream orders them.
 */
import type { Req } from '../http/server.js';
import { baseUrl as forwardedBase } from '../http/forwarded.js';
import type { Slice } from '../ledger/read-model/reader.js';
import { dataErrors } from './errors.js';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export interface PageQuery {
  offset: number;
  limit: number;
}

export interface Paging {
  current: string;
  offset: number;
  limit: number;
  total: number;
  first: string;
  prev?: string;
  next?: string;
  last: string;
}

function intParam(req: Req, name: string, dflt: number, min: number, max: number): number {
  const raw = req.query.get(name);
  if (raw === null) return dflt;
  if (!/^\d{1,10}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw dataErrors.invalidPaging({ name, min, max, value: raw.slice(0, 40) });
  }
  return Number(raw);
}

export function parsePage(req: Req): PageQuery {
  return {
    offset: intParam(req, 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
    limit: intParam(req, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
  };
}

/** `<scheme>://<host>` as proxies report it (no path prefix on the data API); for the batch-status link. */
export function baseUrl(req: Req): string {
  return forwardedBase(req, false);
}

export function pagingOf(req: Req, page: PageQuery, total: number): Paging {
  const { offset, limit } = page;
  const keep = new URLSearchParams();
  for (const [k, v] of req.query) if (k !== 'limit' && k !== 'offset' && k !== 'service_id') keep.append(k, v);
  const service = req.query.get('service_id');
  const base = `${req.path}?`;
  const link = (o: number): string => {
    const q = new URLSearchParams(keep);
    q.append('limit', String(limit));
    if (service !== null) q.append('service_id', service);
    q.append('offset', String(o));
    return base + q.toString();
  };
  const lastOffset = total === 0 ? 0 : Math.floor((total - 1) / limit) * limit;
  // Past the end, `prev` leads back to the last page; `next` is the page right after this one.
  const prev = offset === 0 ? null : offset >= total ? lastOffset : Math.max(offset - limit, 0);
  const next = offset + limit < total ? offset + limit : null;
  return {
    current: link(offset),
    offset,
    limit,
    total,
    first: link(0),
    ...(prev === null ? {} : { prev: link(prev) }),
    ...(next === null ? {} : { next: link(next) }),
    last: link(lastOffset),
  };
}

/** `{data, paging}` of one page. */
export function listBody<T, U>(req: Req, page: PageQuery, slice: Slice<T>, shape: (t: T) => U): { data: U[]; paging: Paging } {
  return { data: slice.items.map(shape), paging: pagingOf(req, page, slice.total) };
}
