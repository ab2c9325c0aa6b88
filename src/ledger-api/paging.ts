/**
 * Marker-based paging shared by the ledger gateway list routes, with upstream's envelope:
 * `link` carries the head used, the marker of the first item returned and the limit
 * applied (`start` bare and `limit=0` when nothing was paged); `paging` echoes the
 * client's `limit` and `start` (null when absent) and, when more items follow, gives
 * `next_position` and a `next` URL.
 */
import type { Req } from '../http/server.js';
import { buildUrl } from './links.js';
import type { Paging } from './params.js';

export interface Page<T> {
  items: T[];
  /** Marker of the first item returned; undefined when the list was empty or not paged. */
  first: string | undefined;
  /** Marker of the item right after the page, if any. */
  next: string | undefined;
}

/** Takes up to `limit` items from `source` (positioned at the page's first item) and notes the next marker. */
export function takePage<T>(source: Iterable<T>, marker: (t: T) => string, limit: number): Page<T> {
  const items: T[] = [];
  let next: string | undefined;
  for (const item of source) {
    if (items.length === limit) {
      next = marker(item);
      break;
    }
    items.push(item);
  }
  const head = items[0];
  return { items, first: head === undefined ? undefined : marker(head), next };
}

/** Pages an in-memory list: `start` must be the marker of one of its items (else `onMissing`), unless it is empty. */
export function pageList<T>(list: T[], marker: (t: T) => string, paging: Paging, onMissing: () => Error): Page<T> {
  if (list.length === 0) return { items: [], first: undefined, next: undefined };
  let from = 0;
  if (paging.start !== undefined) {
    from = list.findIndex((t) => marker(t) === paging.start);
    if (from < 0) throw onMissing();
  }
  return takePage(list.slice(from, from + paging.limit + 1), marker, paging.limit);
}

export const EMPTY_PAGE: Page<never> = { items: [], first: undefined, next: undefined };

export interface PagingJson {
  limit: number | null;
  start: string | null;
  next?: string;
  next_position?: string;
}

/** The `head`, `link` and `paging` members of a list response. */
export function pagingEnvelope(
  req: Req,
  path: string,
  head: string,
  paging: Paging,
  page: Page<unknown>,
): { head: string; link: string; paging: PagingJson } {
  const paged = page.first !== undefined;
  const link = buildUrl(req, path, { head, start: paged ? page.first : '', limit: paged ? paging.limit : 0 });
  const pj: PagingJson = { limit: paging.clientLimit, start: paging.clientStart };
  if (page.next !== undefined) {
    pj.next_position = page.next;
    pj.next = buildUrl(req, path, { head, start: page.next, limit: paging.clientLimit ?? undefined });
  }
  return { head, link, paging: pj };
}
