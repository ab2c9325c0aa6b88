/**
 * Small pieces of reading a request in src/http/server.ts: its id and its path parameters.
 *
 * Request ids: the client's `x-request-id` when it is a short token, else this process's
 * prefix and a counter (unique per process, cheap). Echoed as `x-request-id` on the reply
 * and named in the request's log lines.
 */
import type { HttpRequest } from '@trufflesuite/uws-js-unofficial';
import { randomBytes } from 'node:crypto';

const REQUEST_ID_PREFIX = randomBytes(4).toString('hex');
const CLIENT_REQUEST_ID = /^[\w.:@-]{1,64}$/;
let requestSeq = 0;

/** The id of a request: the client's when it is a short token, else a new one. */
export function requestId(ureq: HttpRequest): string {
  const given = ureq.getHeader('x-request-id');
  return given && CLIENT_REQUEST_ID.test(given) ? given : `${REQUEST_ID_PREFIX}-${(++requestSeq).toString(36)}`;
}

/** A path parameter decoded; one that is not valid percent-encoding is kept as sent. */
export function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
