/**
 * IntegerKey (`intkey` 1.0): names (≤ 20 chars) mapped to integers in 0..2^32-1,
 * with verbs set, inc and dec, exactly as the reference processor checks them.
 * State at an address is a CBOR map {name: value} so that colliding names share it.
 */
import { decode, encode, CborError, type CborValue } from '../codec/cbor.js';
import { InvalidTransaction, type Family, type TxnContext, type TxnInfo } from './types.js';
import { namespacePrefix, sha512Hex } from './address.js';

export const INTKEY_PREFIX = namespacePrefix('intkey'); // 1cf126
const MAX_NAME = 20;
const MAX_VALUE = 4294967295;

export function intkeyAddress(name: string): string {
  return INTKEY_PREFIX + sha512Hex(name).slice(-64);
}

/** The payload as the reference CLI encodes it (keys in canonical order). */
export function intkeyPayload(verb: string, name: string, value: number): Buffer {
  return encode({ Verb: verb, Name: name, Value: value });
}

function field(m: Map<CborValue, CborValue>, key: string): CborValue | undefined {
  return m.get(key);
}

function decodeState(raw: Uint8Array | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (!raw) return out;
  let v: CborValue;
  try {
    v = decode(raw);
  } catch {
    throw new InvalidTransaction('Invalid state serialization');
  }
  if (!(v instanceof Map)) throw new InvalidTransaction('Invalid state serialization');
  for (const [k, val] of v) if (typeof k === 'string' && typeof val === 'number') out.set(k, val);
  return out;
}

export function applyIntkey(txn: TxnInfo, ctx: TxnContext): void {
  let p: CborValue;
  try {
    p = decode(txn.payload);
  } catch (e) {
    /* c8 ignore next */
    if (!(e instanceof CborError)) throw e;
    throw new InvalidTransaction('Invalid payload serialization');
  }
  if (!(p instanceof Map)) throw new InvalidTransaction('Invalid payload serialization');
  const verb = field(p, 'Verb');
  const name = field(p, 'Name');
  const value = field(p, 'Value');
  if (verb === undefined || name === undefined || value === undefined) {
    throw new InvalidTransaction('Payload must contain Verb, Name and Value');
  }
  if (verb !== 'set' && verb !== 'inc' && verb !== 'dec') {
    throw new InvalidTransaction(`Verb must be "set", "inc", or "dec", not ${JSON.stringify(String(verb))}`);
  }
  if (typeof name !== 'string' || name.length > MAX_NAME) {
    throw new InvalidTransaction(`Name must be a string of no more than ${MAX_NAME} characters`);
  }
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_VALUE) {
    throw new InvalidTransaction(`Value must be an integer no less than 0 and no greater than ${MAX_VALUE}`);
  }
  const address = intkeyAddress(name);
  const state = decodeState(ctx.get(address));
  const current = state.get(name);
  let next: number;
  if (verb === 'set') {
    if (current !== undefined) {
      throw new InvalidTransaction(`Verb is "set", but already exists: Name: ${name}, Value ${current}`);
    }
    next = value;
  } else {
    if (current === undefined) throw new InvalidTransaction(`Verb is "${verb}" but name "${name}" not in state`);
    next = verb === 'inc' ? current + value : current - value;
    if (next > MAX_VALUE) throw new InvalidTransaction(`Verb is "inc", but result would be greater than ${MAX_VALUE}`);
    if (next < 0) throw new InvalidTransaction('Verb is "dec", but result would be less than 0');
  }
  state.set(name, next);
  // The map itself (encode sorts its keys as for an object): an object keyed by names lost
  // a name `__proto__` (an assignment to the prototype) and made V8 a hidden class per name.
  ctx.set(address, encode(state));
}

export const intkey: Family = {
  name: 'intkey',
  versions: ['1.0'],
  namespaces: [INTKEY_PREFIX],
  apply: applyIntkey,
};
