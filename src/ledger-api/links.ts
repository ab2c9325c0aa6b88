/**
 * `link` and paging `next` URLs as the upstream gateway builds them: scheme, host and a
 * path prefix from the `Forwarded` header when it names them, else from X-Forwarded-Proto,
 * -Host and -Path, else the request's own; query keys ordered head, start, limit, then the
 * rest alphabetically; a bare key for an empty value; values are not re-encoded.
 */
import type { Req } from '../http/server.js';
import { baseUrl } from '../http/forwarded.js';

export { baseUrl };

export type QueryChanges = Record<string, string | number | undefined>;

/**
 * `<base><path>?<query>`: the request's query (first value of each key) overridden by
 * `changes`; a change of undefined leaves the key as it was.
 */
export function buildUrl(req: Req, path: string, changes: QueryChanges = {}): string {
  const q = new Map<string, string>();
  for (const [k, v] of req.query) if (!q.has(k)) q.set(k, v);
  for (const [k, v] of Object.entries(changes)) if (v !== undefined) q.set(k, String(v));
  const parts: string[] = [];
  const emit = (k: string): void => {
    const v = q.get(k);
    if (v === undefined) return;
    parts.push(v === '' ? k : `${k}=${v}`);
    q.delete(k);
  };
  emit('head');
  emit('start');
  emit('limit');
  for (const k of [...q.keys()].sort()) emit(k);
  return `${baseUrl(req)}${path}${parts.length ? `?${parts.join('&')}` : ''}`;
}

/** The link of a single-resource or non-list route: this request's path and query. */
export function selfUrl(req: Req, changes: QueryChanges = {}): string {
  return buildUrl(req, req.path, changes);
}
