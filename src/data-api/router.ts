/**
 * Routes of the data API: each handler gets, besides the request, the caller (when
 * authorization is on) and the backend (ledger, read model) the request names.
 */
import type { Req } from '../http/server.js';
import { answer, type ApiBinding, type Request, type RouteDef, type RouteSpec } from '../http/route.js';
import type { Identity } from '../auth/identity.js';
import type { Backends, DataBackend } from './backend.js';
import type { DataAuth } from './auth.js';

/** What the data API adds to a request. */
export interface DataCaller {
  /** The caller, when authorization is on (else null). */
  identity: Identity | null;
  be: DataBackend;
}

export type DataRequest = Request<DataCaller>;

/** No per-route permission: reads need `data.read`, writes `data.write` (src/data-api/auth.ts). */
export type DataRoute = RouteSpec<DataCaller, never>;

/** The data API's hook: authorization (when on), then the backend the request names. */
export function dataBinding(backends: Backends, auth: DataAuth | null): ApiBinding<DataCaller, DataRoute> {
  return {
    async enter(req: Req) {
      const identity = auth === null ? null : await auth.check(req);
      return { identity, be: backends.forRequest(req) };
    },
  };
}

/** The data API's route table, filled by the route modules and mounted by index.ts. */
export class DataRouter {
  readonly routes: DataRoute[] = [];

  /** Declares a route: `params`, `loaded`, `query` and `body` of its handler are typed by its path, load step and parsers. */
  route<Path extends string, Q = URLSearchParams, B = Buffer, L = undefined>(def: RouteDef<DataCaller, never, Path, Q, B, object, L>): this {
    this.routes.push(def);
    return this;
  }
}

/** An answer (written by the route's reply schema): the one answer helper, src/http/route.ts's `answer`, by the data API's name. */
export const ok = answer;
