/**
 * Password storage: the client's `hashed_password` is hashed again with bcrypt
 * (@node-rs/bcrypt, which runs on the libuv pool, off the HTTP thread). bcrypt reads at
 * most 72 bytes, so the input is first reduced to base64(SHA-256(hashed_password)):
 * two different long inputs can never share a stored hash.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/bcrypt';

function prehash(password: string): string {
  return createHash('sha256').update(password, 'utf8').digest('base64');
}

export class PasswordHasher {
  readonly #cost: number;
  /** A hash of nothing, made once at start so the first unknown-username login is not faster. */
  readonly #dummy: Promise<string>;

  constructor(cost: number) {
    this.#cost = cost;
    this.#dummy = hash(randomBytes(16).toString('hex'), cost);
    this.#dummy.catch(() => undefined);
  }

  hash(password: string): Promise<string> {
    return hash(prehash(password), this.#cost);
  }

  verify(password: string, stored: string): Promise<boolean> {
    return verify(prehash(password), stored);
  }

  /** Spends the same time as a real check, for usernames that do not exist. */
  async verifyNothing(password: string): Promise<false> {
    await verify(prehash(password), await this.#dummy);
    return false;
  }
}
