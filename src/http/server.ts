/**
 * A thin layer over uWebSockets.js shared by the three interfaces: a typed route table,
 * request snapshots (uWS request objects die at the first await), bounded body reading,
 * bounded request lines and headers, corked replies that never touch an aborted or
 * finished response, and JSON 404/405/413/414/431/500 in the interface's own error shape.
 *
 * HEAD is served on every GET route by the GET handler, answered with the GET's status and
 * headers, its Content-Length, and no body (RFC 9110 §9.3.2), and so is every refusal of a
 * HEAD request (404, 405, 414, 431): a body after a HEAD answer would be read by the client
 * as the start of the next answer on the connection.
 *
 * An exception thrown inside a uWS callback is not caught by uWS: it ends the process.
 * So every callback registered here (routes, catch-alls, onData, onAborted, websocket
 * handlers) runs behind a guard that logs the error and, while the response can still
 * be written, answers 500.
 *
 * Its options, the request-head limits, the body budget and the per-request exchange record
 * are in server-options.ts (re-exported here).
 */
import uws from '@trufflesuite/uws-js-unofficial';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, WebSocket, WebSocketBehavior } from '@trufflesuite/uws-js-unofficial';
import { log } from '../log.js';
import { idFits } from './ids.js';
import { ApiError } from './api-error.js';
import { httpRefusals, type Refusal } from './errors.js';
import type { Handler, Method, Reply, Req } from './types.js';
import { prepareReply, streamBody, type Prepared } from './reply.js';
import { decodeURIComponentSafe, requestId } from './request-id.js';
import { MAX_HEADER_BYTES, MAX_URL_BYTES, type Exchange, type ServerOptions } from './server-options.js';

export type { Handler, Method, Reply, Req } from './types.js';
export { BodyBudget, MAX_HEADER_BYTES, MAX_URL_BYTES, type ServerOptions } from './server-options.js';

/** uWS ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT (the enum is declared but not exported at run time). */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

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
    const names = method === 'get' ? ['GET', 'HEAD'] : [METHOD_NAMES[method]];
    if (!methods) {
      this.#allowed.set(pattern, names);
      this.app.any(pattern, (res, req) =>
        this.#immediate(res, req, () => {
          const allow = (this.#allowed.get(pattern) ?? []).join(', ');
          const r = this.#refuse(httpRefusals.methodNotAllowed({ method: req.getMethod().toUpperCase(), url: req.getUrl() }));
          return { ...r, headers: { ...r.headers, allow } };
        }),
      );
    } else {
      methods.push(...names);
    }
    const withBody = method === 'post' || method === 'put' || method === 'patch' || method === 'del';
    this.app[method](pattern, (res, req) => this.#dispatch(res, req, handler, withBody, pattern));
    if (method === 'get') this.app.head(pattern, (res, req) => this.#dispatch(res, req, handler, false, pattern, true));
    return this;
  }

  /**
   * A websocket route. Every handler runs guarded: an exception is logged and, from
   * `upgrade`, answered 500; from a socket handler, the socket is closed with 1011.
   */
  ws<T>(pattern: string, behavior: WebSocketBehavior<T>): this {
    const b: WebSocketBehavior<T> = { ...behavior };
    const name = this.#opts.name;
    const { upgrade, open, message, drain, close, ping, pong } = behavior;
    if (upgrade) {
      b.upgrade = (res, req, context) => {
        const state: Exchange = { done: false };
        res.onAborted(() => {
          state.done = true;
        });
        try {
          const limit = this.#headLimit(req);
          if (limit) return this.#finishReply(res, state, limit, false, false);
          upgrade(res, req, context);
          state.done = true;
        } catch (err) {
          this.#finishReply(res, state, this.#errorToReply(err, 'GET', pattern), false, false);
        }
      };
    }
    const guard =
      <A extends unknown[]>(what: string, fn: (ws: WebSocket<T>, ...a: A) => unknown, closeOnError: boolean) =>
      (ws: WebSocket<T>, ...a: A): void => {
        try {
          void fn(ws, ...a);
        } catch (err) {
          log.error(`${name}: error in the websocket ${what} handler of ${pattern}`, err);
          if (!closeOnError) return;
          try {
            ws.end(1011, 'Internal error');
          } catch {
            // already closed
          }
        }
      };
    if (open) b.open = guard('open', open, true);
    if (message) b.message = guard('message', message, true);
    if (drain) b.drain = guard('drain', drain, true);
    if (ping) b.ping = guard('ping', ping, true);
    if (pong) b.pong = guard('pong', pong, true);
    if (close) b.close = guard('close', close, false);
    this.app.ws(pattern, b);
    return this;
  }

  /** Registers the catch-all 404; call after every route. */
  #finish(): void {
    this.app.any('/*', (res, req) => this.#immediate(res, req, () => this.#refuse(httpRefusals.noResource({ url: req.getUrl() }))));
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

  /** A reply made on the spot (404/405): still behind the head limits and the guard. */
  #immediate(res: HttpResponse, ureq: HttpRequest, make: () => Reply): void {
    const state: Exchange = { done: false, head: ureq.getMethod() === 'head' };
    try {
      this.#finishReply(res, state, this.#headLimit(ureq) ?? make(), false, false);
    } catch (err) {
      log.error(`${this.#opts.name}: error while answering ${ureq.getMethod().toUpperCase()} ${ureq.getUrl()}`, err);
      this.#finishReply(res, state, this.#internalError(), false, false);
    }
  }

  /** 414 for a request target over MAX_URL_BYTES, 431 for headers over MAX_HEADER_BYTES, else null. */
  #headLimit(ureq: HttpRequest): Reply | null {
    const url = ureq.getUrl().length + (ureq.getQuery() ?? '').length;
    if (url > MAX_URL_BYTES) return this.#refuse(httpRefusals.targetTooLong({ max: MAX_URL_BYTES }));
    let size = 0;
    ureq.forEach((k, v) => {
      size += k.length + v.length + 4;
    });
    if (size > MAX_HEADER_BYTES) return this.#refuse(httpRefusals.headersTooLarge({ max: MAX_HEADER_BYTES }));
    return null;
  }

  #dispatch(res: HttpResponse, ureq: HttpRequest, handler: Handler, withBody: boolean, pattern: string, head = false): void {
    const state: Exchange = { done: false, id: requestId(ureq), head };
    if (this.#opts.observe || log.enabled('debug')) {
      state.route = pattern;
      state.method = ureq.getMethod().toUpperCase();
      state.t0 = performance.now();
    }
    this.#inflight++;
    let req: Req | undefined;
    res.onAborted(() => {
      if (req) req.aborted = true;
      this.#release(state);
      if (!state.done) {
        state.done = true;
        this.#inflight--;
      }
    });
    try {
      const limit = this.#headLimit(ureq);
      if (limit) return this.#finishReply(res, state, limit, withBody);
      // No prototype: a header named `__proto__` or `constructor` is just a header.
      const headers: Record<string, string> = Object.create(null) as Record<string, string>;
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
      if (this.#opts.boundParams !== false && !params.every(idFits)) {
        return this.#finishReply(res, state, this.#refuse(httpRefusals.noResource({ url: `${ureq.getUrl().slice(0, 200)}…` })), withBody);
      }
      req = {
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
      if (!withBody) {
        this.#run(res, req, handler, state);
        return;
      }
      const declared = Number(headers['content-length'] ?? '0');
      if (declared > this.#opts.maxBodyBytes) {
        this.#finishReply(res, state, this.#tooLarge(), true);
        return;
      }
      this.#readBody(res, req, handler, state);
    } catch (err) {
      this.#finishReply(res, state, this.#errorToReply(err, req?.method ?? '?', req?.path ?? '?', state.id), withBody);
    }
  }

  #readBody(res: HttpResponse, req: Req, handler: Handler, state: Exchange): void {
    let chunks: Buffer[] = [];
    let size = 0;
    res.onData((ab, isLast) => {
      if (state.done) return;
      try {
        size += ab.byteLength;
        if (size > this.#opts.maxBodyBytes) {
          chunks = [];
          this.#finishReply(res, state, this.#tooLarge(), true);
          return;
        }
        const budget = this.#opts.bodyBudget;
        if (budget) {
          if (budget.used + ab.byteLength > budget.max) {
            chunks = [];
            const r = this.#refuse(httpRefusals.bodyBudgetFull());
            this.#finishReply(res, state, { ...r, headers: { ...r.headers, 'retry-after': '1' } }, true);
            return;
          }
          budget.used += ab.byteLength;
          state.held = (state.held ?? 0) + ab.byteLength;
        }
        // uWS neuters the chunk when this callback returns: copy it.
        chunks.push(Buffer.copyBytesFrom(new Uint8Array(ab)));
        if (isLast) {
          req.body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
          chunks = [];
          this.#run(res, req, handler, state);
        }
      } catch (err) {
        chunks = [];
        this.#finishReply(res, state, this.#errorToReply(err, req.method, req.path, state.id), true);
      }
    });
  }

  #tooLarge(): Reply {
    return this.#refuse(httpRefusals.bodyTooLarge({ max: this.#opts.maxBodyBytes }));
  }

  #internalError(): Reply {
    try {
      return this.#refuse(httpRefusals.internal());
    } catch {
      return { status: 500, body: '{"message":"Internal server error"}' };
    }
  }

  #run(res: HttpResponse, req: Req, handler: Handler, state: Exchange): void {
    let out: Reply | Promise<Reply>;
    try {
      const refused = req.method !== 'GET' && req.method !== 'HEAD' ? this.#opts.refuseWrite?.(req.method, req.path) : null;
      if (refused) {
        this.#finishReply(res, state, this.#refuse(httpRefusals.readOnly({ reason: refused })));
        return;
      }
      out = handler(req);
    } catch (err) {
      this.#finishReply(res, state, this.#errorToReply(err, req.method, req.path, state.id));
      return;
    }
    if (out instanceof Promise) {
      out.then(
        (r) => this.#finishReply(res, state, r),
        (err: unknown) => this.#finishReply(res, state, this.#errorToReply(err, req.method, req.path, state.id)),
      );
    } else {
      this.#finishReply(res, state, out);
    }
  }

  /** The reply to one of the server's own refusals, in this interface's error shape. */
  #refuse(r: Refusal): Reply {
    return this.#opts.errorReply(r.status, r.message, r.code);
  }

  /** The reply to `err` in this interface's error shape, with the error's own headers. */
  #replyOf(err: ApiError): Reply {
    const r = this.#opts.errorReply(err.status, err.message, err.code);
    return err.headers ? { ...r, headers: { ...r.headers, ...err.headers } } : r;
  }

  #errorToReply(err: unknown, method: string, path: string, id?: string): Reply {
    try {
      if (err instanceof ApiError) return this.#replyOf(err);
      const storage = this.#opts.storageError?.(err);
      if (storage) return this.#refuse(httpRefusals.storageFault({ reason: storage }));
      log.error(`${this.#opts.name}: unhandled error on ${method} ${path.slice(0, 200)}${id ? ` (request ${id})` : ''}`, err);
    } catch (e) {
      log.error(`${this.#opts.name}: error while building an error reply`, e);
    }
    return this.#internalError();
  }

  /**
   * Sends `reply` once; never throws. `close` ends the connection after it (the body was
   * not read to its end); `cork` is false in the synchronous top of a uWS handler, which
   * is corked already. A reply that cannot be written (wrong types) becomes a 500.
   */
  #finishReply(res: HttpResponse, state: Exchange, reply: Reply, close = false, counted = true): void {
    if (state.done) return;
    state.done = true;
    this.#release(state);
    if (counted) this.#inflight--;
    if (state.t0 !== undefined) this.#observed(state, reply.status);
    let out: Prepared;
    try {
      out = prepareReply(reply, this.#opts.commonHeaders);
    } catch (err) {
      log.error(`${this.#opts.name}: a handler returned a reply that cannot be sent`, err);
      out = prepareReply(this.#internalError(), this.#opts.commonHeaders);
    }
    try {
      res.cork(() => {
        res.writeStatus(out.status);
        for (const [k, v] of out.headers) res.writeHeader(k, v);
        if (state.id !== undefined) res.writeHeader('x-request-id', state.id);
        if (state.head) {
          // The length the GET's body has, and no body. Written as a header of ours: this
          // uWS's endWithoutBody(length) leaves the response pending, waiting for that many
          // body bytes, and the connection stalls; without a length it writes none itself.
          // (A HEAD has no body left unread, so `close` does not apply.)
          res.writeHeader('content-length', String(typeof out.body === 'string' ? Buffer.byteLength(out.body) : out.body.byteLength));
          res.endWithoutBody();
        } else if (close) res.end(out.body, true);
        else streamBody(res, out.body, this.#opts.name);
      });
    } catch (err) {
      log.error(`${this.#opts.name}: could not write a reply`, err);
      try {
        res.close();
      } catch {
        // the response is gone already
      }
    }
  }

  /** Metrics and the debug request line of a timed exchange. */
  #observed(state: Exchange, status: number): void {
    const seconds = (performance.now() - state.t0!) / 1000;
    this.#opts.observe?.(state.method!, state.route!, status, seconds);
    log.fields(
      'debug',
      { req: state.id, server: this.#opts.name, method: state.method, route: state.route, status, ms: Math.round(seconds * 10000) / 10 },
      'request',
    );
  }

  #release(state: Exchange): void {
    if (!state.held) return;
    this.#opts.bodyBudget!.used -= state.held;
    state.held = 0;
  }
}

const EMPTY = Buffer.alloc(0);
