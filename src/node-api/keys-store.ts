/**
 * Per-user keys. A key belongs to one user (`${user_id}/${public_key}`); the same public
 * key may be registered by several users. Callers only ever reach their own keys.
 */
import { Invalid } from '../store/record-errors.js';
import { bad, isObject, optString, reqString, type JsonObject } from './body.js';
import { prefixRange, type KeyRecord, type Stores } from './stores.js';

export interface KeyInput {
  public_key: string;
  display_name: string;
  encrypted_private_key: string;
}

const HEX = { max: 520, pattern: /^[0-9a-fA-F]+$/, patternHelp: 'must be a hex string' };

/** Reads a Key from a body object; `user_id` in the body is ignored (the owner is the caller). */
export function keyInput(o: unknown, where = ''): KeyInput {
  if (!isObject(o)) throw bad(`${where ? where.slice(0, -1) : 'Key'} must be a JSON object`);
  const b = o as JsonObject;
  return {
    public_key: reqString(b, 'public_key', HEX, where),
    display_name: optString(b, 'display_name', { max: 256, empty: true }, where) ?? '',
    encrypted_private_key: optString(b, 'encrypted_private_key', { max: 65536, empty: true }, where) ?? '',
  };
}

export function keyJson(k: KeyRecord): KeyRecord {
  return { display_name: k.display_name, encrypted_private_key: k.encrypted_private_key, public_key: k.public_key, user_id: k.user_id };
}

const keyOf = (userId: string, pk: string): string => `${userId}/${pk}`;

export class KeyStore {
  readonly #s: Stores;

  constructor(stores: Stores) {
    this.#s = stores;
  }

  list(userId: string): KeyRecord[] {
    return Array.from(this.#s.keys.getRange(prefixRange(userId)).map(({ value }) => value));
  }

  get(userId: string, pk: string): KeyRecord | undefined {
    return this.#s.keys.get(keyOf(userId, pk));
  }

  /** Adds keys inside the current transaction; duplicates (stored or in `keys`) are a 400. */
  addSync(userId: string, keys: KeyInput[]): KeyRecord[] {
    const seen = new Set<string>();
    const out: KeyRecord[] = [];
    for (const k of keys) {
      if (seen.has(k.public_key) || this.get(userId, k.public_key)) {
        throw new Invalid(`Public key ${k.public_key} for user ${userId} is already in database`);
      }
      seen.add(k.public_key);
      const rec: KeyRecord = { ...k, user_id: userId };
      void this.#s.keys.put(keyOf(userId, k.public_key), rec);
      out.push(rec);
    }
    return out;
  }

  add(userId: string, k: KeyInput): Promise<KeyRecord> {
    return this.#s.root.transaction(() => this.addSync(userId, [k])[0]!);
  }

  replaceAll(userId: string, keys: KeyInput[]): Promise<void> {
    return this.#s.root.transaction(() => {
      this.removeAllSync(userId);
      this.addSync(userId, keys);
    });
  }

  rename(userId: string, pk: string, name: string): Promise<boolean> {
    return this.#s.root.transaction(() => {
      const cur = this.get(userId, pk);
      if (!cur) return false;
      void this.#s.keys.put(keyOf(userId, pk), { ...cur, display_name: name });
      return true;
    });
  }

  remove(userId: string, pk: string): Promise<KeyRecord | undefined> {
    return this.#s.root.transaction(() => {
      const cur = this.get(userId, pk);
      if (cur) void this.#s.keys.remove(keyOf(userId, pk));
      return cur;
    });
  }

  removeAllSync(userId: string): void {
    for (const key of Array.from(this.#s.keys.getKeys(prefixRange(userId)))) void this.#s.keys.remove(key);
  }
}
