/**
 * Writing a reply over uWS, the half of src/http/server.ts that comes after the handler:
 * a reply is checked and flattened first (status line, header list, body), so that writing
 * it cannot fail half-way, then written without letting uWS buffer what the socket cannot
 * take.
 */
import type { HttpResponse } from '@trufflesuite/uws-js-unofficial';
import { log } from '../log.js';
import { RETRY_AFTER_SEC } from '../store/alarms.js';
import type { Reply } from './types.js';

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  302: '302 Found',
  303: '303 See Other',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  408: '408 Request Timeout',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  414: '414 URI Too Long',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

const statusLine = (s: number): string => STATUS_TEXT[s] ?? `${s} Status`;

/** A reply ready to write: its status line, its headers in order, its body. */
export interface Prepared {
  status: string;
  headers: Array<[string, string]>;
  body: string | Uint8Array;
}

/**
 * Checks and flattens a reply before anything is written, so writing cannot fail half-way
 * (a header or body of the wrong type throws here). `common`: headers every reply gets.
 */
export function prepareReply(reply: Reply, common: Record<string, string> | undefined): Prepared {
  const contentType = reply.contentType ?? 'application/json';
  const headers: Array<[string, string]> = [['content-type', contentType]];
  const add = (h: Record<string, string> | undefined): void => {
    if (!h) return;
    for (const k of Object.keys(h)) {
      const v = h[k];
      if (typeof v !== 'string') throw new TypeError(`header ${k} is not a string`);
      headers.push([k, v]);
    }
  };
  add(common);
  add(reply.headers);
  // Every 503 says when to try again (an alarm, a full body budget, a login flood).
  if (reply.status === 503 && !headers.some(([k]) => k.toLowerCase() === 'retry-after')) headers.push(['retry-after', String(RETRY_AFTER_SEC)]);
  const body = reply.body;
  if (typeof body !== 'string' && !(body instanceof Uint8Array)) throw new TypeError('reply body is neither a string nor bytes');
  if (typeof contentType !== 'string') throw new TypeError('content type is not a string');
  return { status: statusLine(reply.status), headers, body };
}

/**
 * Ends the response without letting uWS copy what the socket cannot take: a client that
 * pipelines requests and never reads would otherwise make the node buffer every answer.
 * The rest is written as the socket drains, and uWS reads no further request from the
 * connection until this response is done. `server`: the server's name, for the log.
 */
export function streamBody(res: HttpResponse, body: string | Uint8Array, server: string): void {
  const total = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  const start = res.getWriteOffset();
  const [ok, done] = res.tryEnd(body, total);
  if (ok || done) return;
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  res.onWritable((offset) => {
    try {
      const [ok2] = res.tryEnd(bytes.subarray(offset - start), total);
      return ok2;
    } catch (err) {
      log.error(`${server}: could not write the rest of a reply`, err);
      return true;
    }
  });
}
