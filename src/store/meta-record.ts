/**
 * Typed records of a ledger's meta database (`<prefix>.meta`, msgpack values), as lodestar
 * keeps a typed repository per record kind: one MetaRecord per key, declared beside the code
 * that owns it (the head in src/store/ledger-stores.ts, the pool's sequence mark in
 * src/ledger/pool-source.ts, the state checkpoint and prune mark in src/state/deltas.ts, a
 * circuit's round in src/scabbard/records.ts, a cluster member's log revision in
 * src/cluster/log-source.ts, the pending pool's identity in src/store/preflight.ts). A read
 * checks the value's shape once, here, so no read site casts what it reads; a value of
 * another shape is a damaged record (CorruptRecordError, answered like a failed checksum).
 */
import type { Database } from 'lmdb';
import { CorruptRecordError } from './alarms.js';

/** A ledger's meta database: values of several shapes, one per key (each a MetaRecord). */
export type MetaDb = Database<unknown, string>;

/** A check that a value read back has the record's shape. */
export type Shape<T> = (v: unknown) => v is T;

export class MetaRecord<T> {
  constructor(
    readonly key: string,
    readonly shape: Shape<T>,
  ) {}

  /** The stored value, or undefined when there is none. */
  get(db: MetaDb): T | undefined {
    const v = db.get(this.key);
    if (v === undefined) return undefined;
    if (!this.shape(v)) throw new CorruptRecordError('ledger.mdb', `meta key ${this.key}`, 'not the shape of its record');
    return v;
  }

  /** Stores `value` (in the caller's transaction, when there is one). */
  put(db: MetaDb, value: T): Promise<boolean> {
    return db.put(this.key, value);
  }

  /** The `[key, value]` pair a round hands the chain writer, stored with its block. */
  entry(value: T): [string, unknown] {
    return [this.key, value];
  }
}

/** A count, a height, a sequence number or a time in milliseconds: a non-negative integer. */
export const isCount: Shape<number> = (v): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

export const isText: Shape<string> = (v): v is string => typeof v === 'string';

/** The shape of a plain object with (at least) these fields of these `typeof` kinds. */
export function fields<T>(spec: { readonly [K in keyof T]: 'string' | 'number' }): Shape<T> {
  const kinds: Array<[string, string]> = Object.entries(spec);
  return (v): v is T => typeof v === 'object' && v !== null && kinds.every(([k, kind]) => typeof Reflect.get(v, k) === kind);
}
