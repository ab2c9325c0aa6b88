/**
 * Resolves the `Authorization` header to an identity:
 * `Bearer Biome:<access jwt>` and `Bearer OAuth2:<token>` give a user,
 * `Bearer Cylinder:<key-signed jwt>` gives a public key. Anything else gives none.
 */
import type { Req } from '../http/server.js';
import { verifyCylinderJwt } from './cylinder.js';
import type { TokenService } from './tokens.js';

/** What the authenticator reads of a credential user (the node API's user store satisfies it). */
export interface UserLookup {
  users: { get(userId: string): { user_id: string; token_gen: number } | undefined };
}

/** Resolves an OAuth2 bearer token to its live session (the node API's OAuth sessions satisfy it). */
export interface SessionResolver {
  resolve(token: string): Promise<{ userId: string; sessionKey: string } | null>;
}

export type Identity =
  | { kind: 'key'; publicKey: string }
  | { kind: 'user'; userId: string; via: 'biome' }
  | { kind: 'user'; userId: string; via: 'oauth'; sessionKey: string };

const VISIBLE_ASCII = /^[\x20-\x7e]*$/;

export interface Credential {
  kind: 'Biome' | 'Cylinder' | 'OAuth2';
  token: string;
}

export const EXPECTED_HEADER =
  'expected "Authorization: Bearer Biome:<token>" (from /biome/login), "Bearer Cylinder:<jwt>" (key-signed, e.g. npm run -s token) or "Bearer OAuth2:<token>" (from /oauth/login)';

/** The credential of a request, or why the header cannot hold one (the reason never quotes the header). */
export function parseCredential(req: Req): Credential | { problem: string } {
  const h = req.headers.authorization;
  if (!h) return { problem: `no Authorization header; ${EXPECTED_HEADER}` };
  if (h.length > 8192 || !VISIBLE_ASCII.test(h))
    return { problem: `the Authorization header is too long or not printable ASCII; ${EXPECTED_HEADER}` };
  const sp = h.indexOf(' ');
  if (sp < 0 || h.slice(0, sp).toLowerCase() !== 'bearer') return { problem: `the Authorization scheme is not Bearer; ${EXPECTED_HEADER}` };
  const bearer = h.slice(sp + 1).trim();
  const colon = bearer.indexOf(':');
  const kind = colon < 0 ? '' : bearer.slice(0, colon);
  if (kind !== 'Biome' && kind !== 'Cylinder' && kind !== 'OAuth2') {
    return { problem: `the bearer token lacks its type prefix (Biome:, Cylinder: or OAuth2:); ${EXPECTED_HEADER}` };
  }
  return { kind, token: bearer.slice(colon + 1) };
}

const REJECTED: Record<Credential['kind'], string> = {
  Biome: 'the Biome token is invalid, expired or logged out; log in again (/biome/login) or refresh it (/biome/token)',
  Cylinder: 'the Cylinder token is not a valid JWT signed by the key it names, or it has expired',
  OAuth2: 'the OAuth2 token is unknown or its session ended; log in again (/oauth/login)',
};

export class Authenticator {
  readonly #tokens: TokenService;
  readonly #stores: UserLookup;
  readonly #oauth: SessionResolver;

  constructor(tokens: TokenService, stores: UserLookup, oauth: SessionResolver) {
    this.#tokens = tokens;
    this.#stores = stores;
    this.#oauth = oauth;
  }

  async authenticate(req: Req): Promise<Identity | null> {
    const r = await this.authenticateOrExplain(req);
    return 'problem' in r ? null : r.identity;
  }

  /** The identity, or a reason fit for the caller (and the log): it names what was expected, never the token. */
  async authenticateOrExplain(req: Req): Promise<{ identity: Identity } | { problem: string }> {
    const cred = parseCredential(req);
    if ('problem' in cred) return cred;
    const identity = await this.#resolve(cred);
    return identity ? { identity } : { problem: REJECTED[cred.kind] };
  }

  async #resolve(cred: Credential): Promise<Identity | null> {
    switch (cred.kind) {
      case 'Cylinder': {
        const publicKey = verifyCylinderJwt(cred.token);
        return publicKey ? { kind: 'key', publicKey } : null;
      }
      case 'Biome': {
        const claims = await this.#tokens.verifyAccess(cred.token);
        if (!claims) return null;
        const user = this.#stores.users.get(claims.userId);
        if (!user || user.token_gen !== claims.gen) return null;
        return { kind: 'user', userId: user.user_id, via: 'biome' };
      }
      case 'OAuth2': {
        const s = await this.#oauth.resolve(cred.token);
        return s ? { kind: 'user', userId: s.userId, via: 'oauth', sessionKey: s.sessionKey } : null;
      }
    }
  }
}
