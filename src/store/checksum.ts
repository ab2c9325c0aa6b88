/**
 * A checksum on every stored record the node serves or builds on: each value is stored as
 * its bytes followed by their CRC-32 (zlib's, computed natively in the writing thread) and
 * verified on every read. LMDB trusts its pages; a bit that flips on the disk would
 * otherwise be served as data, or built on. A mismatch throws CorruptRecordError, which
 * the interfaces answer with 503 and a CORRUPT alarm (src/store/alarms.ts), never the bytes.
 *
 *   record = value bytes | crc32(value bytes) (u32, little-endian)
 *
 * Every sub-database is opened through `openStore` (never `openDB`), with a value encoder
 * that seals and checks: msgpack values as lmdb-js encodes them by default, binary values
 * as they are. Readers that take a record's raw bytes (`getBinaryFast`, for zero-copy
 * reads) check it with `unseal`; the id index checks an id record in full when it indexes
 * it, and its lookups then compare the id bytes they answer with (src/store/id-index.ts). Not sealed: the Merkle records (content
 * addressed: the state engine checks them against their hashes) and the pending pool
 * (a checksum of its own, src/store/pending-pool.ts).
 *
 * Data directories written before the checksums are sealed once at start, in one
 * transaction (`sealExisting`), and marked in `store.format`.
 */
import { crc32 } from 'node:zlib';
import type { Database, RootDatabase } from 'lmdb';
import { Packr } from 'msgpackr';
import { log } from '../log.js';
import { CorruptRecordError } from './alarms.js';
import { keepOnReopen, storeMethod } from './reopen.js';

const TRAILER = 4;

/** Key encodings of the stores whose keys are not lmdb-js's default (ordered-binary). */
export type KeyEncoding = 'uint32' | 'binary';

export interface StoreOptions {
  /** Values are raw bytes (Buffer) rather than msgpack. */
  binary?: boolean;
  keyEncoding?: KeyEncoding;
}

/** The file every sealed store lives in (for messages). */
const FILE = 'ledger.mdb';

/** The value bytes of a sealed record, checked; throws CorruptRecordError naming `where`. */
export function unseal(raw: Uint8Array, where: string): Buffer {
  const n = raw.length - TRAILER;
  const view = Buffer.from(raw.buffer, raw.byteOffset, raw.length);
  if (n < 0 || crc32(view.subarray(0, n)) !== view.readUInt32LE(n)) throw new CorruptRecordError(FILE, where);
  return view.subarray(0, n);
}

/** A record's stored bytes: `value` and its checksum. */
export function seal(value: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(value.length + TRAILER);
  out.set(value, 0);
  out.writeUInt32LE(crc32(value), value.length);
  return out;
}

interface ValueCodec {
  encode(value: unknown): Buffer;
  decode(bytes: Uint8Array): unknown;
  needsStableBuffer: boolean;
}

function codec(name: string, binary: boolean): ValueCodec {
  // The encoder lmdb-js gives a store without options (msgpackr, embedded buffers copied).
  const packr = binary ? null : new Packr({ copyBuffers: true });
  return {
    // lmdb-js reads through its shared buffer and calls decode: the result must not point into it.
    needsStableBuffer: false,
    encode: (value) => {
      if (packr) return seal(packr.pack(value));
      if (!(value instanceof Uint8Array)) throw new TypeError(`${name} stores bytes, not ${typeof value}`);
      return seal(value);
    },
    decode: (bytes) => {
      const body = unseal(bytes, name);
      return packr ? packr.unpack(body) : Buffer.from(body);
    },
  };
}

function describeKey(key: unknown): string {
  if (typeof key === 'string') return key.length > 80 ? `${key.slice(0, 80)}…` : key;
  if (key instanceof Uint8Array) return Buffer.from(key).toString('hex').slice(0, 80);
  return String(key);
}

/**
 * Opens the sub-database `name` with sealed values. A record that fails its check on `get`
 * throws CorruptRecordError naming the store and the key.
 */
export function openStore<V, K extends import('lmdb').Key = import('lmdb').Key>(
  root: RootDatabase,
  name: string,
  o: StoreOptions = {},
): Database<V, K> {
  const db = root.openDB<V, K>(name, {
    encoder: codec(name, o.binary === true),
    ...(o.keyEncoding ? { keyEncoding: o.keyEncoding } : {}),
  } as never);
  let get = db.get.bind(db);
  // Kept when the environment is reopened under its stores (src/store/reopen.ts), with the new handle's get.
  keepOnReopen(db, 'get', () => {
    get = storeMethod<typeof db.get>(db, 'get').bind(db);
  });
  db.get = (key: K, options?: unknown) => {
    try {
      return get(key, options as never);
    } catch (err) {
      if (err instanceof CorruptRecordError && err.record === name) throw new CorruptRecordError(FILE, `${name} key ${describeKey(key)}`);
      throw err;
    }
  };
  return db;
}

/** Sub-database of the store format marks (not sealed itself). */
const FORMAT_DB = 'store.format';
const SEALED = 'sealed';

/** Stores never sealed: content addressed, or with a checksum of their own, or emptied. */
function unsealedStore(name: string): boolean {
  return name === FORMAT_DB || name.endsWith('.merkle') || name.endsWith('.batch_index') || name.endsWith('.txn_index');
}

/** The key encoding each store is opened with (names.ts), by its name. */
export function keyEncodingOf(name: string): KeyEncoding | undefined {
  if (/\.(block_ids|receipts|state_deltas)$/.test(name)) return 'uint32';
  if (name.endsWith('.state_roots')) return 'binary';
  return undefined;
}

/**
 * Seals every record of an environment written before the checksums existed, in one
 * transaction, once: a new environment is only marked. Returns the number of records sealed.
 */
export function sealExisting(root: RootDatabase): number {
  const format = root.openDB<number, string>(FORMAT_DB, {});
  if (format.get(SEALED) === 1) return 0;
  const names: string[] = [];
  for (const key of root.getKeys()) if (typeof key === 'string' && key !== FORMAT_DB) names.push(key);
  let records = 0;
  const stores: string[] = [];
  root.transactionSync(() => {
    for (const name of names) {
      if (unsealedStore(name)) continue;
      const keyEncoding = keyEncodingOf(name);
      const raw = root.openDB<Buffer, import('lmdb').Key>(name, { encoding: 'binary', ...(keyEncoding ? { keyEncoding } : {}) });
      let n = 0;
      for (const { key, value } of raw.getRange({})) {
        raw.putSync(key, seal(value));
        n++;
      }
      records += n;
      if (n) stores.push(name);
    }
    format.putSync(SEALED, 1);
  });
  if (records) log.info(`store format: checksums added to ${records} records in ${stores.length} sub-databases (${stores.join(', ')})`);
  return records;
}
