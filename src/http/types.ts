/**
 * The shapes a route's request and reply take between the uWS server (src/http/server.ts),
 * the reply writer (src/http/reply.ts), the route tables (src/http/route.ts) and the
 * interfaces. Kept apart from the server so that what writes or builds replies does not
 * import the server module (and the server does not import them back).
 */
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
