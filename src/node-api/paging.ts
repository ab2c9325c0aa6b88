/**
 * Offset/limit paging of the node API: offset default 0, limit default 100 (1..100),
 * and the paging object with root-relative links `<base>limit=L&offset=O`.
 */
import { nodeErrors } from './errors.js';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 100;

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
  prev: string;
  next: string;
  last: string;
}

function intParam(query: URLSearchParams, name: string, dflt: number, min: number, max: number): number {
  const raw = query.get(name);
  if (raw === null) return dflt;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw nodeErrors.invalidPaging({ name, value: raw.slice(0, 40), min, max });
  }
  return Number(raw);
}

export function parsePageQuery(query: URLSearchParams): PageQuery {
  return {
    offset: intParam(query, 'offset', 0, 0, 999_999_999),
    limit: intParam(query, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
  };
}

/** `base` ends with `?` or `&`, e.g. `/registry/nodes?` or `/registry/nodes?filter=...&`. */
export function paging(base: string, page: PageQuery, total: number): Paging {
  const { offset, limit } = page;
  const link = (o: number): string => `${base}limit=${limit}&offset=${o}`;
  const last = total === 0 ? 0 : Math.floor((total - 1) / limit) * limit;
  const prev = offset > limit ? offset - limit : 0;
  const next = offset + limit > last ? last : offset + limit;
  return { current: link(offset), offset, limit, total, first: link(0), prev: link(prev), next: link(next), last: link(last) };
}

/** One page of `items` plus its paging object. */
export function pageOf<T>(items: T[], base: string, page: PageQuery): { data: T[]; paging: Paging } {
  return { data: items.slice(page.offset, page.offset + page.limit), paging: paging(base, page, items.length) };
}
