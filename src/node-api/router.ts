/**
 * Route registration for interface A. Every operation declares who may call it
 * (public, any authenticated identity, or a permission) and the protocol versions it
 * exists in. Order of checks: credentials (401), permission (403), then the
 * NodeProtocolVersion header (400): the version selects shapes, never skips a check.
 */
import { ApiError, type HttpServer, type Method, type Reply, type Req } from '../http/server.js';
import type { Authenticator, Identity } from './identity.js';
import type { Access } from './access.js';
import type { Permission } from './permissions.js';
import { log } from '../log.js';

export type Version = 1 | 2;
export const LATEST_VERSION: Version = 2;

export interface Call {
  req: Req;
  version: Version;
  identity: Identity | null;
}

export interface AuthedCall extends Call {
  identity: Identity;
}

export type Guard = 'public' | 'authenticated' | Permission;

export function json(body: unknown, status = 200, headers?: Record<string, string>): Reply {
  return { status, body: JSON.stringify(body), headers };
}

export function protocolVersion(req: Req): Version {
  const a = req.headers['nodeprotocolversion'];
  const b = req.headers['splinterprotocolversion'];
  const raw = a ?? b;
  if (raw === undefined) return LATEST_VERSION;
  if (a !== undefined && b !== undefined && a.trim() !== b.trim()) {
    throw new ApiError(400, 'NodeProtocolVersion and SplinterProtocolVersion headers disagree');
  }
  const v = raw.trim();
  if (v === '1' || v === '2') return Number(v) as Version;
  throw new ApiError(400, `Unsupported NodeProtocolVersion: ${JSON.stringify(v.slice(0, 20))}; this node supports 1 and 2`);
}

export class Router {
  readonly #server: HttpServer;
  readonly #authn: Authenticator;
  readonly #access: Access;

  constructor(server: HttpServer, authn: Authenticator, access: Access) {
    this.#server = server;
    this.#authn = authn;
    this.#access = access;
  }

  /** A route any caller may use. */
  public(method: Method, path: string, handler: (c: Call) => Reply | Promise<Reply>, minVersion: Version = 1): void {
    this.#add(method, path, 'public', minVersion, handler);
  }

  /** A route that needs credentials and, unless `guard` is 'authenticated', a permission. */
  secured(method: Method, path: string, guard: Exclude<Guard, 'public'>, handler: (c: AuthedCall) => Reply | Promise<Reply>, minVersion: Version = 1): void {
    this.#add(method, path, guard, minVersion, (c) => handler(c as AuthedCall));
  }

  #add(method: Method, path: string, guard: Guard, minVersion: Version, handler: (c: Call) => Reply | Promise<Reply>): void {
    this.#server.route(method, path, async (req) => {
      let identity: Identity | null = null;
      if (guard !== 'public') {
        identity = await authorize(this.#authn, this.#access, req, guard, 'node');

      }
      const version = protocolVersion(req);
      if (version < minVersion) {
        throw new ApiError(400, `This operation needs protocol version ${minVersion} or greater; the request asked for ${version}`);
      }
      return handler({ req, version, identity });
    });
  }
}

function who(id: Identity): string {
  return id.kind === 'key' ? `key ${id.publicKey}` : `user ${id.userId}`;
}

/**
 * Credentials (401 with a message that says what is expected) then the permission (403).
 * Shared by interfaces A and B. Each refusal is logged with the reason, never the token.
 */
export async function authorize(authn: Authenticator, access: Access, req: Req, guard: Exclude<Guard, 'public'>, api: string): Promise<Identity> {
  const r = await authn.authenticateOrExplain(req);
  if ('problem' in r) {
    log.info(`${api}: 401 on ${req.method} ${req.path}: ${r.problem.split(';')[0]}`);
    throw new ApiError(401, `Client is not authorized: ${r.problem}`, undefined, { 'www-authenticate': 'Bearer' });
  }
  if (guard !== 'authenticated' && !access.allowed(r.identity, guard)) {
    log.info(`${api}: 403 on ${req.method} ${req.path}: ${who(r.identity)} lacks ${guard}`);
    throw new ApiError(403, `Client lacks the permission ${guard}`);
  }
  return r.identity;
}

/** The caller as a user, or 403 when it is a key (Cylinder) identity. */
export function requireUser(c: AuthedCall): string {
  if (c.identity.kind !== 'user') throw new ApiError(403, 'This operation needs a user identity (a Biome or OAuth2 token)');
  return c.identity.userId;
}
