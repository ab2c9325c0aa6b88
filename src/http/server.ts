/**
 * A thin layer over uWebSockets.js shared by the three interfaces: a typed route table,
 * request snapshots (uWS request objects die at the first await), bounded body reading,
 * corked replies that never touch an aborted response, and JSON 404/405/413/500 in the
 * interface's own error shape.
 */
import uws from '@trufflesuite/uws-js-unofficial';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, WebSocketBehavior } from '@trufflesuite/uws-js-unofficial';
import { log } from '../log.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'del' | 'options';

export interface Req {
  method: string;
  path: string;
  /** Raw query string without '?'. */
  rawQuery: string;
  query: URLSearchParams;
  /** Lower-case header names. */
  headers: Record<string, string>;
  params: string[];
  body: Buffer;
  /** Set when the client went away; handlers may check it before expensive work. */
  aborted: boolean;
  /** The peer's IP address as text (the TCP peer, not X-Forwarded-For). */
  remoteAddress: string;
}

export interface Reply {
  status: number;
  body: string | Buffer | Uint8Array;
  contentType?: string;
  headers?: Record<string, string>;
}

export type Handler = (req: Req) => Reply | Promise<Reply>;

/** An error a handler throws to answer with a given status and the interface's error body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Interface-specific detail (e.g. the Sawtooth error code). */
    readonly detail?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export interface ServerOptions {
  name: string;
  maxBodyBytes: number;
  /** Builds the body of an error reply in this interface's shape. */
  errorReply(status: number, message: string, detail?: unknown): Reply;
  /** Extra headers on every reply (e.g. CORS when enabled). */
  commonHeaders?: Record<string, string>;
}

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 202: '202 Accepted', 204: '204 No Content',
  302: '302 Found', 303: '303 See Other', 400: '400 Bad Request', 401: '401 Unauthorized',
  403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed', 408: '408 Request Timeout',
  409: '409 Conflict', 413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 429: '429 Too Many Requests',
  500: '500 Internal Server Error', 503: '503 Service Unavailable',
};
/** uWS ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT (the enum is declared but not exported at run time). */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;
const statusLine = (s: number): string => STATUS_TEXT[s] ?? `${s} Status`;

const METHOD_NAMES: Record<Method, string> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', del: 'DELETE', options: 'OPTIONS' };

export class HttpServer {
  readonly app: TemplatedApp;
  readonly #opts: ServerOptions;
  #listen: us_listen_socket | null = null;
  readonly #allowed = new Map<string, string[]>();
  #inflight = 0;

  constructor(opts: ServerOptions) {
    this.app = uws.App();
    this.#opts = opts;
  }

  route(method: Method, pattern: string, handler: Handler): this {
    const methods = this.#allowed.get(pattern);
    if (!methods) {
      this.#allowed.set(pattern, [METHOD_NAMES[method]]);
      this.app.any(pattern, (res, req) => {
        const allow = (this.#allowed.get(pattern) ?? []).join(', ');
        const r = this.#opts.errorReply(405, `Method ${req.getMethod().toUpperCase()} is not allowed on ${req.getUrl()}`);
        this.#sendNow(res, { ...r, headers: { ...r.headers, allow } });
      });
    } else {
      methods.push(METHOD_NAMES[method]);
    }
    const withBody = method === 'post' || method === 'put' || method === 'patch' || method === 'del';
    this.app[method](pattern, (res, req) => this.#dispatch(res, req, handler, withBody));
    return this;
  }

  ws<T>(pattern: string, behavior: WebSocketBehavior<T>): this {
    this.app.ws(pattern, behavior);
    return this;
  }

  /** Registers the catch-all 404; call after every route. */
  #finish(): void {
    this.app.any('/*', (res, req) => {
      this.#sendNow(res, this.#opts.errorReply(404, `No resource at ${req.getUrl()}`));
    });
  }

  listen(host: string, port: number): Promise<number> {
    this.#finish();
    return new Promise((resolve, reject) => {
      // Exclusive: without it uWS sets SO_REUSEPORT and a second process on the same port
      // would silently share the traffic (the typings lack the host + options overload).
      const listen = this.app.listen as unknown as (h: string, p: number, o: number, cb: (t: us_listen_socket | false) => void) => void;
      listen.call(this.app, host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, (token) => {
        if (!token) return reject(new Error(`${this.#opts.name}: cannot listen on ${host}:${port} (is the port in use by another process?)`));
        this.#listen = token;
        resolve(uws.us_socket_local_port(token));
      });
    });
  }

  /** Stops accepting connections and waits (bounded) for in-flight requests. */
  async close(graceMs = 2000): Promise<void> {
    if (this.#listen) uws.us_listen_socket_close(this.#listen);
    this.#listen = null;
    const until = Date.now() + graceMs;
    while (this.#inflight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    (this.app as unknown as { close?: () => void }).close?.();
  }

  #dispatch(res: HttpResponse, ureq: HttpRequest, handler: Handler, withBody: boolean): void {
    const headers: Record<string, string> = {};
    ureq.forEach((k, v) => {
      headers[k] = v;
    });
    const rawQuery = ureq.getQuery() ?? '';
    const params: string[] = [];
    for (let i = 0; ; i++) {
      const p = ureq.getParameter(i);
      if (p === undefined || p === '') break;
      params.push(decodeURIComponentSafe(p));
    }
    const req: Req = {
      method: ureq.getMethod().toUpperCase(),
      path: ureq.getUrl(),
      rawQuery,
      query: new URLSearchParams(rawQuery),
      headers,
      params,
      body: EMPTY,
      aborted: false,
      remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString(),
    };
    const state = { done: false };
    this.#inflight++;
    res.onAborted(() => {
      req.aborted = true;
      if (!state.done) {
        state.done = true;
        this.#inflight--;
      }
    });
    if (!withBody) {
      this.#run(res, req, handler, state);
      return;
    }
    const declared = Number(headers['content-length'] ?? '0');
    if (declared > this.#opts.maxBodyBytes) {
      this.#finishReply(res, state, this.#tooLarge());
      return;
    }
    let chunks: Buffer[] = [];
    let size = 0;
    res.onData((ab, isLast) => {
      if (state.done) return;
      size += ab.byteLength;
      if (size > this.#opts.maxBodyBytes) {
        chunks = [];
        this.#finishReply(res, state, this.#tooLarge(), true);
        return;
      }
      // uWS neuters the chunk when this callback returns: copy it.
      chunks.push(Buffer.from(new Uint8Array(ab).slice()));
      if (isLast) {
        req.body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        chunks = [];
        this.#run(res, req, handler, state);
      }
    });
  }

  #tooLarge(): Reply {
    return this.#opts.errorReply(413, `Request body exceeds ${this.#opts.maxBodyBytes} bytes`);
  }

  #run(res: HttpResponse, req: Req, handler: Handler, state: { done: boolean }): void {
    let out: Reply | Promise<Reply>;
    try {
      out = handler(req);
    } catch (err) {
      this.#finishReply(res, state, this.#errorToReply(err, req));
      return;
    }
    if (out instanceof Promise) {
      out.then(
        (r) => this.#finishReply(res, state, r),
        (err) => this.#finishReply(res, state, this.#errorToReply(err, req)),
      );
    } else {
      this.#finishReply(res, state, out);
    }
  }

  #errorToReply(err: unknown, req: Req): Reply {
    if (err instanceof HttpError) {
      const r = this.#opts.errorReply(err.status, err.message, err.detail);
      return err.headers ? { ...r, headers: { ...r.headers, ...err.headers } } : r;
    }
    log.error(`${this.#opts.name}: unhandled error on ${req.method} ${req.path}`, err);
    return this.#opts.errorReply(500, 'Internal server error');
  }

  #finishReply(res: HttpResponse, state: { done: boolean }, reply: Reply, close = false): void {
    if (state.done) return;
    state.done = true;
    this.#inflight--;
    res.cork(() => {
      this.#write(res, reply);
      if (close) res.close();
    });
  }

  /** For replies from the synchronous top of a handler (already corked). */
  #sendNow(res: HttpResponse, reply: Reply): void {
    this.#write(res, reply);
  }

  #write(res: HttpResponse, reply: Reply): void {
    res.writeStatus(statusLine(reply.status));
    res.writeHeader('content-type', reply.contentType ?? 'application/json');
    const common = this.#opts.commonHeaders;
    if (common) for (const k in common) res.writeHeader(k, common[k]!);
    if (reply.headers) for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!);
    res.end(reply.body);
  }
}

const EMPTY = Buffer.alloc(0);

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
