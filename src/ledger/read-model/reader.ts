/**
 * Read access to the supply-chain read model the committer keeps in step with each block
 * (sub-databases named in GRID_DB, msgpack values). Reads are synchronous and see every
 * block whose event has reached this thread: a record is readable the moment its batch
 * reports COMMITTED.
 */
import type { Database, RootDatabase } from 'lmdb';
import { readModelDbName } from '../../store/names.js';
import { GRID_DB } from './keys.js';
import { openStore } from '../../store/checksum.js';

export type GridDbName = keyof typeof GRID_DB;

/** Half-open key range covering every key that starts with `prefix`. */
function prefixRange(prefix: string): { start: string; end: string } | Record<string, never> {
  if (prefix === '') return {};
  const last = prefix.charCodeAt(prefix.length - 1);
  return { start: prefix, end: prefix.slice(0, -1) + String.fromCharCode(last + 1) };
}

export interface Slice<T> {
  items: T[];
  /** Size of the whole collection (or filtered set), not of the page. */
  total: number;
}

export class ReadModel {
  readonly #dbs = new Map<GridDbName, Database<unknown, string>>();

  /** `prefix`: the ledger's read-model prefix ('' for the node's own ledger; see store/names.ts). */
  constructor(root: RootDatabase, prefix = '') {
    for (const [name, dbName] of Object.entries(GRID_DB) as Array<[GridDbName, string]>) {
      this.#dbs.set(name, openStore<unknown, string>(root, readModelDbName(prefix, dbName)));
    }
  }

  #db(name: GridDbName): Database<unknown, string> {
    return this.#dbs.get(name) as Database<unknown, string>;
  }

  get<T>(name: GridDbName, key: string): T | undefined {
    return this.#db(name).get(key) as T | undefined;
  }

  has(name: GridDbName, key: string): boolean {
    return this.#db(name).doesExist(key);
  }

  /** One page of the records whose key starts with `prefix`, and how many there are. */
  page<T>(name: GridDbName, prefix: string, offset: number, limit: number): Slice<T> {
    const db = this.#db(name);
    const range = prefixRange(prefix);
    // getCount marks the options object it is given as count-only: pass a copy.
    const total = db.getCount({ ...range });
    const items: T[] = [];
    if (offset < total) for (const { value } of db.getRange({ ...range, offset, limit })) items.push(value as T);
    return { items, total };
  }

  /** Every record whose key starts with `prefix`, in key order. */
  all<T>(name: GridDbName, prefix = ''): T[] {
    return Array.from(this.#db(name).getRange(prefixRange(prefix)), ({ value }) => value as T);
  }
}
