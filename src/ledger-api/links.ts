/**
 * `link` and paging `next` URLs as the upstream gateway builds them: scheme and host
 * from Forwarded / X-Forwarded-* when present, query keys ordered head, start, limit,
 * then the rest alphabetically, and a bare key for an empty value.
 */
import type { Req } from '../http/server.js';

function forwarded(req: Req, key: string): string | undefined {
  const f = req.headers['forwarded'];
  if (!f) return undefined;
  for (const part of f.split(/[;,]/)) {
    const [k, v] = part.trim().split('=');
    if (k?.toLowerCase() === key && v) return v.replace(/^"(.*)"$/, '$1');
  }
  return undefined;
}

export function baseUrl(req: Req): string {
  const proto = forwarded(req, 'proto') ?? req.headers['x-forwarded-proto'] ?? 'http';
  const host = forwarded(req, 'host') ?? req.headers['x-forwarded-host'] ?? req.headers['host'] ?? 'localhost';
  const prefix = forwarded(req, 'path') ?? req.headers['x-forwarded-path'] ?? '';
  return `${proto}://${host}${prefix.replace(/\/$/, '')}`;
}

/** Builds `<base><path>?<query>` from the request's query merged with `changes` (undefined = unchanged). */
export function buildUrl(req: Req, path: string, changes: Record<string, string | number | undefined> = {}, useQuery = true): string {
  const q = new Map<string, string>();
  if (useQuery) for (const [k, v] of req.query) q.set(k, v);
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
  return `${baseUrl(req)}${path}${parts.length ? '?' + parts.join('&') : ''}`;
}
