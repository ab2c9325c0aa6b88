/**
 * OAuth sessions: the node hands the browser a random token (`OAuth2:<token>`); only
 * its SHA-256 is stored, with the user, the subject and the provider's tokens. A
 * session older than the re-check interval is re-validated with the provider before
 * use and deleted when the provider no longer accepts it.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { OidcClient } from './oauth-client.js';
import { prefixRange, type OAuthSessionRecord, type Stores } from './stores.js';

export interface ResolvedSession {
  userId: string;
  sessionKey: string;
}

const keyOf = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

export class OAuthSessions {
  readonly #s: Stores;
  readonly #client: OidcClient | null;
  readonly #recheckMs: number;

  constructor(stores: Stores, client: OidcClient | null, recheckSec: number) {
    this.#s = stores;
    this.#client = client;
    this.#recheckMs = recheckSec * 1000;
  }

  /** Creates a session and returns the token to give to the client. */
  async create(rec: OAuthSessionRecord): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const key = keyOf(token);
    await this.#s.root.transaction(() => {
      void this.#s.oauthSessions.put(key, rec);
      void this.#s.oauthSessionsByUser.put(`${rec.user_id}/${key}`, 1);
    });
    return token;
  }

  async resolve(token: string): Promise<ResolvedSession | null> {
    if (token.length === 0 || token.length > 256) return null;
    const key = keyOf(token);
    const rec = this.#s.oauthSessions.get(key);
    if (!rec) return null;
    if (Date.now() - rec.last_authenticated >= this.#recheckMs) {
      const fresh = this.#client
        ? await this.#client.recheck(rec.subject, rec.provider_access_token, rec.provider_refresh_token).catch(() => null)
        : null;
      if (!fresh) {
        await this.remove(key);
        return null;
      }
      await this.#s.oauthSessions.put(key, {
        ...rec,
        provider_access_token: fresh.accessToken,
        provider_refresh_token: fresh.refreshToken,
        last_authenticated: Date.now(),
      });
    }
    return { userId: rec.user_id, sessionKey: key };
  }

  async remove(sessionKey: string): Promise<void> {
    const rec = this.#s.oauthSessions.get(sessionKey);
    await this.#s.root.transaction(() => {
      void this.#s.oauthSessions.remove(sessionKey);
      if (rec) void this.#s.oauthSessionsByUser.remove(`${rec.user_id}/${sessionKey}`);
    });
  }

  /** Deletes every session of a user (call inside a transaction or alone). */
  removeAllOfUserSync(userId: string): number {
    let n = 0;
    const keys = Array.from(this.#s.oauthSessionsByUser.getKeys(prefixRange(userId)));
    for (const key of keys) {
      void this.#s.oauthSessions.remove(key.slice(userId.length + 1));
      void this.#s.oauthSessionsByUser.remove(key);
      n++;
    }
    return n;
  }

  async removeAllOfUser(userId: string): Promise<number> {
    return this.#s.root.transaction(() => this.removeAllOfUserSync(userId));
  }
}
