/**
 * Resolves the `Authorization` header to an identity (research splinter.md §2.1):
 * `Bearer Biome:<access jwt>` and `Bearer OAuth2:<token>` give a user,
 * `Bearer Cylinder:<key-signed jwt>` gives a public key. Anything else gives none.
 */
import type { Req } from '../http/server.js';
import { verifyCylinderJwt } from './cylinder.js';
import type { TokenService } from './tokens.js';
import type { Stores } from './stores.js';
import type { OAuthSessions } from './oauth-sessions.js';

export type Identity =
  | { kind: 'key'; publicKey: string }
  | { kind: 'user'; userId: string; via: 'biome' }
  | { kind: 'user'; userId: string; via: 'oauth'; sessionKey: string };

const VISIBLE_ASCII = /^[\x20-\x7e]*$/;

export interface Credential {
  kind: 'Biome' | 'Cylinder' | 'OAuth2';
  token: string;
}

export function readCredential(req: Req): Credential | null {
  const h = req.headers.authorization;
  if (!h || h.length > 8192 || !VISIBLE_ASCII.test(h)) return null;
  const sp = h.indexOf(' ');
  if (sp < 0 || h.slice(0, sp).toLowerCase() !== 'bearer') return null;
  const bearer = h.slice(sp + 1).trim();
  const colon = bearer.indexOf(':');
  if (colon < 0) return null;
  const kind = bearer.slice(0, colon);
  if (kind !== 'Biome' && kind !== 'Cylinder' && kind !== 'OAuth2') return null;
  return { kind, token: bearer.slice(colon + 1) };
}

export class Authenticator {
  readonly #tokens: TokenService;
  readonly #stores: Stores;
  readonly #oauth: OAuthSessions;

  constructor(tokens: TokenService, stores: Stores, oauth: OAuthSessions) {
    this.#tokens = tokens;
    this.#stores = stores;
    this.#oauth = oauth;
  }

  async authenticate(req: Req): Promise<Identity | null> {
    const cred = readCredential(req);
    if (!cred) return null;
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
