/** Random secrets kept in files of the data directory (mode 0600), created on first use. */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';

export function loadOrCreateSecret(path: string, bytes = 32): Uint8Array {
  if (existsSync(path)) {
    const hex = readFileSync(path, 'utf8').trim();
    if (!/^[0-9a-f]{64,}$/.test(hex)) throw new Error(`secret file ${path} is malformed (expected hex)`);
    return Buffer.from(hex, 'hex');
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const secret = randomBytes(bytes);
  writeFileSync(path, `${secret.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return secret;
}
