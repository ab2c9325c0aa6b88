/**
 * A small JSON client for the node API (and any HTTP interface of a node): what a test needs
 * to call a node it did not start in this process. Kept apart from node-api.ts, which starts
 * nodes in-process and so loads the whole of src/ (about 1.5 s of CPU per test process): the
 * circuit tests talk only to child processes and need none of it.
 */
export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  // Parsed JSON body (undefined when the body is not JSON).
  body: unknown;
}

export interface CallOptions {
  body?: unknown;
  /** Sent verbatim (string) or JSON-encoded. */
  raw?: string;
  /** Full Authorization header value, or a token to send as `Bearer <token>`. */
  auth?: string;
  version?: string | number;
  headers?: Record<string, string>;
}

export type Call = (method: string, path: string, opts?: CallOptions) => Promise<ApiResponse>;

export function client(base: string): Call {
  return async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.auth !== undefined) headers.authorization = opts.auth.startsWith('Bearer') ? opts.auth : `Bearer ${opts.auth}`;
    if (opts.version !== undefined) headers.nodeprotocolversion = String(opts.version);
    let body: string | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) body = JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(base + path, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, text, body: parsed };
  };
}
