/**
 * Key files in the data directory: a hex private key per file, created with mode 0600
 * on first use and never printed.
 */
import { existsSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomPrivateKey, Signer } from '../crypto/secp256k1.js';
import { makeDirs } from './dirs.js';

export function loadOrCreateKey(path: string): Signer {
  if (existsSync(path)) {
    const hex = readFileSync(path, 'utf8').trim();
    try {
      return new Signer(hex);
    } catch {
      throw new Error(`key file ${path} does not hold a valid secp256k1 private key`);
    }
  }
  makeDirs(dirname(path), 0o700);
  const hex = randomPrivateKey();
  writeFileSync(path, `${hex}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return new Signer(hex);
}
