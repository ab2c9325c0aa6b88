/**
 * secp256k1 ECDSA as Sawtooth uses it: SHA-256 of the message, 64-byte compact r||s
 * signatures (low-S only), 33-byte compressed public keys, all hex on the wire.
 *
 * The native `secp256k1` addon (libsecp256k1) is the hot path. When it cannot be
 * loaded, @noble/secp256k1 (pure JS, ~40x slower) takes over; `backend` says which.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import * as noble from '@noble/secp256k1';
import { hexBytesInto } from '../codec/hex.js';

const require = createRequire(import.meta.url);

interface NativeSecp {
  ecdsaVerify(sig: Uint8Array, msg32: Uint8Array, pub: Uint8Array): boolean;
  publicKeyConvert(pub: Uint8Array, compressed?: boolean): Uint8Array;
  ecdsaSign(msg32: Uint8Array, priv: Uint8Array): { signature: Uint8Array };
  publicKeyCreate(priv: Uint8Array, compressed?: boolean): Uint8Array;
  privateKeyVerify(priv: Uint8Array): boolean;
  publicKeyVerify(pub: Uint8Array): boolean;
}

function loadNative(): NativeSecp | null {
  if (process.env.CAIRN_FORCE_NOBLE === '1') return null;
  try {
    // The package's root falls back to its own JS (elliptic) when the addon is missing;
    // we load the addon entry directly so that a missing build really means "no native".
    return require('secp256k1/bindings') as NativeSecp;
  } catch {
    return null;
  }
}

noble.hashes.sha256 = (m: Uint8Array) => new Uint8Array(createHash('sha256').update(m).digest());
noble.hashes.hmacSha256 = (k: Uint8Array, m: Uint8Array) => new Uint8Array(createHmac('sha256', k).update(m).digest());

const native = loadNative();

/** Which implementation verifies signatures in this thread. */
export const backend: 'native' | 'noble' = native ? 'native' : 'noble';

const PUBHEX = /^0[23][0-9a-f]{64}$/;

export function sha256(data: Uint8Array | string): Buffer {
  return createHash('sha256').update(data).digest();
}

export function sha512Hex(data: Uint8Array | string): string {
  return createHash('sha512').update(data).digest('hex');
}

/**
 * Signers' keys in the uncompressed form libsecp256k1 parses without a square root
 * (~10% of a verify with a compressed key). The same few keys sign most batches; the map
 * is emptied when full.
 */
const uncompressed = new Map<string, Uint8Array>();
const UNCOMPRESSED_KEYS = 4096;

function nativeKey(n: NativeSecp, publicKeyHex: string): Uint8Array | null {
  let pub = uncompressed.get(publicKeyHex);
  if (pub === undefined) {
    // Only keys in the canonical text form are taken (and so kept here).
    if (!PUBHEX.test(publicKeyHex)) return null;
    // Throws for a point that is not on the curve (the caller answers false).
    pub = n.publicKeyConvert(Buffer.from(publicKeyHex, 'hex'), false);
    if (uncompressed.size >= UNCOMPRESSED_KEYS) uncompressed.clear();
    uncompressed.set(publicKeyHex, pub);
  }
  return pub;
}

/**
 * Verifies a hex compact signature over sha256(message) with a hex compressed key.
 * Returns false (never throws) for malformed input, high-S signatures or wrong keys.
 */
export function verify(signatureHex: string, message: Uint8Array, publicKeyHex: string): boolean {
  const sig = Buffer.allocUnsafe(64);
  if (typeof signatureHex !== 'string' || !hexBytesInto(signatureHex, 64, sig) || typeof publicKeyHex !== 'string') return false;
  const digest = sha256(message);
  try {
    if (native) {
      const key = nativeKey(native, publicKeyHex);
      return key !== null && native.ecdsaVerify(sig, digest, key);
    }
    if (!PUBHEX.test(publicKeyHex)) return false;
    const pub = Buffer.from(publicKeyHex, 'hex');
    return noble.verify(sig, digest, pub, { prehash: false, lowS: true });
  } catch {
    return false;
  }
}

export function publicKeyFromPrivate(privateKeyHex: string): string {
  const priv = Buffer.from(privateKeyHex, 'hex');
  const pub = native ? native.publicKeyCreate(priv, true) : noble.getPublicKey(priv, true);
  return Buffer.from(pub).toString('hex');
}

export function isValidPrivateKey(privateKeyHex: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(privateKeyHex)) return false;
  return noble.utils.isValidSecretKey(Buffer.from(privateKeyHex, 'hex'));
}

export function isValidPublicKey(publicKeyHex: string): boolean {
  if (!PUBHEX.test(publicKeyHex)) return false;
  return noble.utils.isValidPublicKey(Buffer.from(publicKeyHex, 'hex'), true);
}

export function randomPrivateKey(): string {
  for (;;) {
    const k = randomBytes(32).toString('hex');
    if (isValidPrivateKey(k)) return k;
  }
}

/** A signing key: deterministic RFC 6979, low-S, as the Sawtooth SDKs produce. */
export class Signer {
  readonly publicKey: string;
  readonly #priv: Buffer;

  constructor(privateKeyHex: string) {
    if (!isValidPrivateKey(privateKeyHex)) throw new Error('invalid secp256k1 private key');
    this.#priv = Buffer.from(privateKeyHex, 'hex');
    this.publicKey = publicKeyFromPrivate(privateKeyHex);
  }

  /** Hex compact signature over sha256(message). */
  sign(message: Uint8Array | string): string {
    const digest = sha256(typeof message === 'string' ? Buffer.from(message) : message);
    const sig = native ? native.ecdsaSign(digest, this.#priv).signature : noble.sign(digest, this.#priv, { prehash: false, lowS: true });
    return Buffer.from(sig).toString('hex');
  }

  /** Never print the private key. */
  toJSON(): { publicKey: string } {
    return { publicKey: this.publicKey };
  }
}
