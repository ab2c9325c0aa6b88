/**
 * Credential users: unique usernames, bcrypt-stored passwords, a token generation
 * that log out and password changes bump. Password checks go through the backoff and
 * answer identically (in result and in time) for unknown usernames and wrong passwords.
 */
import { randomUUID } from 'node:crypto';
import { Conflict, Denied, NotFound } from '../store/record-errors.js';
import type { PasswordHasher } from '../auth/passwords.js';
import type { LoginBackoff } from './backoff.js';
import type { KeyInput, KeyStore } from './keys-store.js';
import type { OAuthSessions } from './oauth-sessions.js';
import type { KeyRecord, Stores, UserRecord } from './stores.js';

export const BAD_CREDENTIALS = 'Invalid username or password';

export class UserStore {
  readonly #s: Stores;
  readonly #hasher: PasswordHasher;
  readonly #backoff: LoginBackoff;
  readonly #keys: KeyStore;
  readonly #sessions: OAuthSessions;
  readonly #byAddress: LoginBackoff | undefined;

  /** `byAddress` throttles failed checks per client address as `backoff` does per username. */
  constructor(stores: Stores, hasher: PasswordHasher, backoff: LoginBackoff, keys: KeyStore, sessions: OAuthSessions, byAddress?: LoginBackoff) {
    this.#s = stores;
    this.#hasher = hasher;
    this.#backoff = backoff;
    this.#keys = keys;
    this.#sessions = sessions;
    this.#byAddress = byAddress;
  }

  get(userId: string): UserRecord | undefined {
    return this.#s.users.get(userId);
  }

  list(): UserRecord[] {
    const out: UserRecord[] = [];
    for (const { value: id } of this.#s.usernames.getRange({})) {
      const u = this.#s.users.get(id);
      if (u) out.push(u);
    }
    return out;
  }

  async create(username: string, hashedPassword: string): Promise<UserRecord> {
    if (this.#s.usernames.get(username) !== undefined) throw new Conflict(`Username already in use: ${username}`);
    const rec: UserRecord = { user_id: randomUUID(), username, password_hash: await this.#hasher.hash(hashedPassword), token_gen: 0 };
    await this.#s.root.transaction(() => {
      if (this.#s.usernames.get(username) !== undefined) throw new Conflict(`Username already in use: ${username}`);
      void this.#s.usernames.put(username, rec.user_id);
      void this.#s.users.put(rec.user_id, rec);
      void this.#s.profiles.put(rec.user_id, {
        user_id: rec.user_id,
        subject: username,
        name: null,
        given_name: null,
        family_name: null,
        email: null,
        picture: null,
      });
    });
    return rec;
  }

  /**
   * The user when the password is right; otherwise 401 (or 429 while backing off).
   * With `onlyUserId`, a username of any other user fails the same way. `from` is the
   * client address, throttled on its own as well.
   */
  async checkPassword(username: string, hashedPassword: string, onlyUserId?: string, from?: string): Promise<UserRecord> {
    const check = (): Promise<UserRecord | null> =>
      this.#backoff.attempt(username, async () => {
        const id = this.#s.usernames.get(username);
        const u = id === undefined || (onlyUserId !== undefined && id !== onlyUserId) ? undefined : this.#s.users.get(id);
        if (!u) return this.#hasher.verifyNothing(hashedPassword).then(() => null);
        return (await this.#hasher.verify(hashedPassword, u.password_hash)) ? u : null;
      });
    const user = from !== undefined && this.#byAddress ? await this.#byAddress.attempt(from, check) : await check();
    if (!user) throw new Denied(BAD_CREDENTIALS);
    return this.#s.users.get(user.user_id) ?? user;
  }

  /** Sets a new password (killing the user's tokens) and/or adds keys, in one transaction. */
  async update(userId: string, newPassword: string | undefined, newKeys: KeyInput[]): Promise<KeyRecord[]> {
    const hash = newPassword === undefined ? undefined : await this.#hasher.hash(newPassword);
    return this.#s.root.transaction(() => {
      const u = this.#s.users.get(userId);
      if (!u) throw new NotFound(`User ID not found: ${userId}`);
      const added = this.#keys.addSync(userId, newKeys);
      if (hash !== undefined) void this.#s.users.put(userId, { ...u, password_hash: hash, token_gen: u.token_gen + 1 });
      return added;
    });
  }

  /** Every access and refresh token of the user stops working. */
  logout(userId: string): Promise<boolean> {
    return this.#s.root.transaction(() => {
      const u = this.#s.users.get(userId);
      if (!u) return false;
      void this.#s.users.put(userId, { ...u, token_gen: u.token_gen + 1 });
      return true;
    });
  }

  /** Removes the user with their keys, profile, role assignment and sessions. */
  remove(userId: string): Promise<boolean> {
    return this.#s.root.transaction(() => {
      const u = this.#s.users.get(userId);
      if (!u) return false;
      void this.#s.users.remove(userId);
      void this.#s.usernames.remove(u.username);
      void this.#s.profiles.remove(userId);
      void this.#s.assignments.remove(`user/${userId}`);
      this.#keys.removeAllSync(userId);
      this.#sessions.removeAllOfUserSync(userId);
      return true;
    });
  }
}
