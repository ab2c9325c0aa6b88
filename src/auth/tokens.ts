/**
 * Access and refresh tokens of credential ("Biome") users: HS256 JWTs made and checked
 * with jose. Each kind has its own secret, persisted in <data dir>/keys so tokens
 * survive a restart. Verification pins the algorithm and the issuer, requires `exp`,
 * and the caller compares `gen` with the user's current token generation (log out
 * bumps it, which kills every access and refresh token of the user at once).
 */
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors } from 'jose';
import { loadOrCreateSecret } from './secrets.js';

export const ISSUER = 'self-issued';
export const ACCESS_PREFIX = 'Biome:';

type Use = 'access' | 'refresh';

export interface TokenClaims {
  userId: string;
  gen: number;
}

export interface TokenOptions {
  dataDir: string;
  accessTtlSec: number;
  refreshTtlSec: number;
}

export class TokenService {
  readonly #secrets: Record<Use, Uint8Array>;
  readonly #ttl: Record<Use, number>;

  constructor(opts: TokenOptions) {
    this.#secrets = {
      access: loadOrCreateSecret(join(opts.dataDir, 'keys', 'access_token.secret')),
      refresh: loadOrCreateSecret(join(opts.dataDir, 'keys', 'refresh_token.secret')),
    };
    this.#ttl = { access: opts.accessTtlSec, refresh: opts.refreshTtlSec };
  }

  /** An access token, already prefixed `Biome:` as clients send it back. */
  async issueAccess(c: TokenClaims): Promise<string> {
    return ACCESS_PREFIX + (await this.#sign('access', c));
  }

  issueRefresh(c: TokenClaims): Promise<string> {
    return this.#sign('refresh', c);
  }

  verifyAccess(jwt: string): Promise<TokenClaims | null> {
    return this.#verify('access', jwt);
  }

  verifyRefresh(jwt: string): Promise<TokenClaims | null> {
    return this.#verify('refresh', jwt);
  }

  #sign(use: Use, c: TokenClaims): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ user_id: c.userId, gen: c.gen, use })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setIssuedAt(now)
      .setExpirationTime(now + this.#ttl[use])
      .setJti(randomUUID())
      .sign(this.#secrets[use]);
  }

  async #verify(use: Use, jwt: string): Promise<TokenClaims | null> {
    if (jwt.length > 4096) return null;
    try {
      const { payload } = await jwtVerify(jwt, this.#secrets[use], {
        algorithms: ['HS256'],
        issuer: ISSUER,
        typ: 'JWT',
        requiredClaims: ['exp', 'user_id', 'gen', 'use'],
      });
      if (payload.use !== use || typeof payload.user_id !== 'string' || typeof payload.gen !== 'number') return null;
      return { userId: payload.user_id, gen: payload.gen };
    } catch (err) {
      if (err instanceof errors.JOSEError) return null;
      throw err;
    }
  }
}
