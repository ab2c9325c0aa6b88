/** Routes of interface B: each handler gets the request and the ledger it names. */
import type { HttpServer, Method, Reply, Req } from '../http/server.js';
import type { Backends, DataBackend } from './backend.js';
import type { DataAuth } from './auth.js';

export type DataHandler = (req: Req, be: DataBackend) => Reply | Promise<Reply>;

export class DataRouter {
  constructor(
    private readonly server: HttpServer,
    private readonly backends: Backends,
    /** Checks credentials and permissions before every handler; null when authorization is off. */
    private readonly auth: DataAuth | null = null,
  ) {}

  route(method: Method, pattern: string, handler: DataHandler): this {
    const auth = this.auth;
    if (auth === null) {
      this.server.route(method, pattern, (req) => handler(req, this.backends.forRequest(req)));
    } else {
      this.server.route(method, pattern, async (req) => {
        await auth.check(req);
        return handler(req, this.backends.forRequest(req));
      });
    }
    return this;
  }
}

export function ok(body: unknown, status = 200): Reply {
  return { status, body: JSON.stringify(body) };
}
