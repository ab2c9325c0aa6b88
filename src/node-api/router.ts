/**
 * Routes of the node API. Every route declares who may call it (`permission`: public,
 * any authenticated identity, or a permission) and the protocol versions it exists in
 * (`minVersion`). Order of checks: credentials (401), permission (403), then the
 * NodeProtocolVersion header (400): the version selects shapes, never skips a check.
 */
import type { Method, Reply, Req } from '../http/server.js';
import { answer, ANY_JSON, type Answer, type ApiBinding, type HandlerResult, type Request, type RouteDef, type RouteSpec } from '../http/route.js';
import type { Authenticator, Identity } from '../auth/identity.js';
import type { Access } from '../auth/access.js';
import { authorize } from '../auth/authorize.js';
import type { Permission } from '../auth/permissions.js';
import { nodeErrors } from './errors.js';

export type Version = 1 | 2;
export const LATEST_VERSION: Version = 2;

/** What the node API adds to a request: the caller (null on public routes) and the protocol version. */
export interface Caller {
  identity: Identity | null;
  version: Version;
}

/** What a secured route's handler gets: the caller is known. */
export type AuthedCaller = Caller & { identity: Identity };

export type Call = Request<Caller>;
export type AuthedCall = Request<AuthedCaller>;

export type Guard = 'public' | 'authenticated' | Permission;

interface Versioned {
  /** Lowest protocol version the route exists in (default 1). */
  minVersion?: Version;
}

export type SecuredGuard = Exclude<Guard, 'public'>;

export interface PublicRoute extends RouteSpec<Caller, 'public'>, Versioned {
  permission: 'public';
  handler(c: Request<Caller, unknown, unknown, string, unknown>): HandlerResult;
}

export interface SecuredRoute extends RouteSpec<Caller, SecuredGuard>, Versioned {
  permission: SecuredGuard;
  handler(c: Request<AuthedCaller, unknown, unknown, string, unknown>): HandlerResult;
}

/** A node API route as declared: its handler typed by its path, load step, parsers and guard. */
export type NodeRouteDef<G extends Guard, Path extends string, Q, B, L = undefined> = RouteDef<
  G extends 'public' ? Caller : AuthedCaller,
  G,
  Path,
  Q,
  B,
  Versioned,
  L
> & {
  permission: G;
};

export type NodeRoute = PublicRoute | SecuredRoute;

/** A JSON answer (written by the route's reply schema): the one answer helper, src/http/route.ts's `answer`, by the node API's name. */
export const json = answer;

export function protocolVersion(req: Req): Version {
  const a = req.headers.nodeprotocolversion;
  const b = req.headers.splinterprotocolversion;
  const raw = a ?? b;
  if (raw === undefined) return LATEST_VERSION;
  if (a !== undefined && b !== undefined && a.trim() !== b.trim()) {
    throw nodeErrors.protocolVersionsDisagree();
  }
  const v = raw.trim();
  if (v === '1' || v === '2') return Number(v) as Version;
  throw nodeErrors.unsupportedProtocolVersion({ version: JSON.stringify(v.slice(0, 20)) });
}

export { authorize };

/** The node API's hook: credentials and permission, then the protocol version. */
export function nodeBinding(authn: Authenticator, access: Access): ApiBinding<Caller, NodeRoute> {
  return {
    async enter(req, route) {
      let identity: Identity | null = null;
      if (route.permission !== 'public') identity = await authorize(authn, access, req, route.permission, 'node');
      const version = protocolVersion(req);
      const minVersion = route.minVersion ?? 1;
      if (version < minVersion) {
        throw nodeErrors.protocolVersionTooLow({ min: minVersion, version });
      }
      return { identity, version };
    },
  };
}

/** The node API's route table, filled by the route modules and mounted by index.ts. */
export class Router {
  readonly routes: NodeRoute[] = [];

  /** Declares a route: `params`, `query` and `body` of its handler are typed by its path and parsers. */
  add<Path extends string, Q = URLSearchParams, B = Buffer, L = undefined>(def: NodeRouteDef<'public', Path, Q, B, L>): void;
  add<Path extends string, Q = URLSearchParams, B = Buffer, L = undefined>(def: NodeRouteDef<SecuredGuard, Path, Q, B, L>): void;
  add(def: NodeRoute): void {
    this.routes.push(def);
  }

  /** Shorthand of `add` for a public route whose reply is any JSON (prefer `add` with a reply schema). */
  public(method: Method, path: string, handler: (c: Call) => Reply | Answer | Promise<Reply | Answer>, minVersion: Version = 1): void {
    this.add({ method, path, permission: 'public', reply: ANY_JSON, handler, minVersion });
  }

  /** Shorthand of `add` for a secured route whose reply is any JSON (prefer `add` with a reply schema). */
  secured(
    method: Method,
    path: string,
    guard: SecuredGuard,
    handler: (c: AuthedCall) => Reply | Answer | Promise<Reply | Answer>,
    minVersion: Version = 1,
  ): void {
    this.add({ method, path, permission: guard, reply: ANY_JSON, handler, minVersion });
  }
}

/** The caller as a user, or 403 when it is a key (Cylinder) identity (a secured route's `load` step, or its handler). */
export function requireUser(c: { identity: Identity }): string {
  if (c.identity.kind !== 'user') throw nodeErrors.needsUserIdentity();
  return c.identity.userId;
}
