/** Marker-based paging shared by the interface C list routes. */
import type { Req } from '../http/server.js';
import { ledgerError } from './errors.js';
import { buildUrl } from './links.js';
import type { Paging } from './params.js';

export interface Page<T> {
  items: T[];
  /** Marker of the first item returned. */
  first: string | undefined;
  /** Marker of the item after the page, if any. */
  next: string | undefined;
}

/**
 * Takes one page from `source` (already in the requested order). When `paging.start` is
 * set, items before the one whose marker equals it are skipped; if none matches → 54.
 */
export function takePage<T>(source: Iterable<T>, marker: (t: T) => string, paging: Paging): Page<T> {
  const items: T[] = [];
  let found = paging.start === undefined;
  let next: string | undefined;
  for (const item of source) {
    if (!found) {
      if (marker(item) !== paging.start) continue;
      found = true;
    }
    if (items.length === paging.limit) {
      next = marker(item);
      break;
    }
    items.push(item);
  }
  if (!found) throw ledgerError(54);
  return { items, first: items.length ? marker(items[0]!) : undefined, next };
}

export interface PagingJson {
  limit: number | null;
  start: string | null;
  next?: string;
  next_position?: string;
}

/** The `link` and `paging` members of a list response. */
export function pagingEnvelope(req: Req, path: string, head: string, paging: Paging, page: Page<unknown>): { link: string; paging: PagingJson } {
  const link = buildUrl(req, path, { head, start: page.first ?? paging.start ?? '', limit: paging.limit });
  const pj: PagingJson = { limit: paging.clientLimit, start: paging.clientStart };
  if (page.next !== undefined) {
    pj.next_position = page.next;
    pj.next = buildUrl(req, path, { head, start: page.next, limit: paging.clientLimit ?? undefined });
  }
  return { link, paging: pj };
}
