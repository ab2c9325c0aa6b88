/**
 * The address a client used, as proxies report it: scheme, host and path prefix from the
 * `Forwarded` header when it names them, else from X-Forwarded-Proto, -Host and -Path,
 * else the request's own Host. The data API and the ledger gateway build absolute links from it.
 */
import type { Req } from './server.js';

const FORWARDED_RE: Record<'proto' | 'host' | 'path', RegExp> = {
  proto: /(?<=proto=).+?(?=[\s,;]|$)/i,
  host: /(?<=host=).+?(?=[\s,;]|$)/i,
  path: /(?<=path=).+?(?=[\s,;]|$)/i,
};

/** One forwarded value: the first `key=` in `Forwarded` (quotes removed), else `X-Forwarded-<Key>`, else ''. */
export function forwarded(req: Req, key: 'proto' | 'host' | 'path'): string {
  const m = FORWARDED_RE[key].exec(req.headers.forwarded ?? '');
  if (m) {
    const v = m[0];
    return v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v;
  }
  return req.headers[`x-forwarded-${key}`] ?? '';
}

/** `<scheme>://<host>` plus, with `withPath`, the forwarded path prefix. */
export function baseUrl(req: Req, withPath = true): string {
  const proto = forwarded(req, 'proto') || 'http';
  const host = forwarded(req, 'host') || req.headers.host || 'localhost';
  return `${proto}://${host}${withPath ? forwarded(req, 'path') : ''}`;
}
