import { createHash } from 'node:crypto';

export function sha512Hex(s: string | Uint8Array): string {
  return createHash('sha512').update(s).digest('hex');
}

export function sha256Hex(s: string | Uint8Array): string {
  return createHash('sha256').update(s).digest('hex');
}

/** First 6 hex of sha512(name): the namespace prefix convention of Sawtooth families. */
export function namespacePrefix(name: string): string {
  return sha512Hex(name).slice(0, 6);
}
