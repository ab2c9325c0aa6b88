/**
 * What an HttpServer (src/http/server.ts) is built with and what it keeps per request: the
 * interface's options (error shape, write gate, storage errors, timing), the request-head
 * limits answered from JS, the body budget shared between servers, and the exchange record
 * of one request from dispatch to its one reply. Kept apart so that the server module holds
 * the flow itself: route, dispatch, body, handler, reply.
 */
import type { Reply } from './types.js';

/**
 * Request-target and header limits answered from JS (414 / 431). uWS closes the
 * connection itself, before any JS runs, when a request head it cannot buffer arrives:
 * more than about 4 KiB split over several reads, more than 48 header lines, or
 * more than its receive buffer in one read. Heads inside those bounds but over these
 * limits get a readable answer.
 */
export const MAX_URL_BYTES = 8192;
export const MAX_HEADER_BYTES = 16384;

/**
 * Bytes of request bodies held at once (being received or being handled), shared by the
 * servers given the same budget: each body is bounded, and this bounds their number.
 */
export class BodyBudget {
  used = 0;
  constructor(readonly max: number) {}
}

export interface ServerOptions {
  name: string;
  maxBodyBytes: number;
  /** Shared bound on request-body bytes held at once; over it a request gets 503. */
  bodyBudget?: BodyBudget;
  /**
   * Path parameters longer than an id may be (MAX_ID_BYTES) name nothing that can exist:
   * 404 before the handler runs. On unless false (for interfaces whose handlers validate
   * ids themselves).
   */
  boundParams?: boolean;
  /** Builds the body of an error reply in this interface's shape (`code`: the interface's own error code, if any). */
  errorReply(status: number, message: string, code?: number): Reply;
  /** Extra headers on every reply (e.g. CORS when enabled). */
  commonHeaders?: Record<string, string>;
  /**
   * The write gate: called before a route's handler with its method and route pattern; a
   * message refuses the request with 503 (a storage alarm makes the node read-only).
   */
  refuseWrite?: (method: string, route: string) => string | null;
  /**
   * An error a handler threw that is not an ApiError: a storage error (a failed write, a
   * damaged record) is turned into an alarm and a 503 with this message; null: a 500.
   */
  storageError?: (err: unknown) => string | null;
  /**
   * Called once per answered route request with its route pattern (not the raw URL, so the
   * label set stays bounded), HTTP status and duration; absent, requests are not timed.
   */
  observe?: (method: string, route: string, status: number, seconds: number) => void;
}

/** One request, from its dispatch to its one reply. */
export interface Exchange {
  /** A reply was sent (or the client went away): the response must not be touched again. */
  done: boolean;
  /** Body bytes charged to the body budget, given back when the exchange ends. */
  held?: number;
  /** The request id (routed requests), sent back as x-request-id. */
  id?: string;
  /** A HEAD request: the answer goes without its body. */
  head?: boolean;
  /** Set only when requests are timed (metrics on) or logged (debug): route pattern, method, start. */
  route?: string;
  method?: string;
  t0?: number;
}
