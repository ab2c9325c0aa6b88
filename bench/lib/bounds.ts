/**
 * The machine's own ceilings, measured in the same run as the bench so that results
 * compare as ratios: native signature verifies per second per core, and exact Merkle
 * node hashes per second.
 */
import { availableParallelism } from 'node:os';
import crypto from 'node:crypto';
import { Signer, randomPrivateKey, verify } from '../../src/crypto/secp256k1.js';
import { encode } from '../../src/codec/cbor.js';

export function verifiesPerSecond(ms = 1000): number {
  const s = new Signer(randomPrivateKey());
  const msg = crypto.randomBytes(150);
  const sig = s.sign(msg);
  let n = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    for (let i = 0; i < 50; i++) verify(sig, msg, s.publicKey);
    n += 50;
  }
  return Math.round((n * 1000) / ms);
}

/** Hashes of a typical single-child interior node (one child entry) per second. */
export function nodeHashesPerSecond(ms = 1000): number {
  const node = encode({ c: { ab: 'f'.repeat(64) }, v: null });
  let n = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    for (let i = 0; i < 200; i++) crypto.hash('sha512', node, 'buffer');
    n += 200;
  }
  return Math.round((n * 1000) / ms);
}

export interface Bounds {
  cores: number;
  verifiesPerSecPerCore: number;
  nodeHashesPerSec: number;
  /** Batches/s the signatures alone allow: verifies/s × cores ÷ verifies per batch. */
  signatureBound: number;
  /** Leaf writes/s the exact Merkle hashing allows (≈ 33 node hashes per new leaf). */
  merkleLeafBound: number;
}

export function measureBounds(txnsPerBatch: number): Bounds {
  const cores = availableParallelism();
  const v = verifiesPerSecond();
  const h = nodeHashesPerSecond();
  return {
    cores,
    verifiesPerSecPerCore: v,
    nodeHashesPerSec: h,
    signatureBound: Math.round((v * cores) / (txnsPerBatch + 1)),
    merkleLeafBound: Math.round(h / 33),
  };
}
