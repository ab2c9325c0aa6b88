/**
 * Cylinder JWTs: key-signed tokens that name a secp256k1
 * public key. Not a standard JWS (standard base64 with padding, alg "secp256k1"), so no
 * JWT library reads them; the format is small and checked strictly here:
 * header {"alg":"secp256k1","typ":"cylinder+jwt"}, claims with "iss" = compressed
 * public key hex, signature = compact low-S ECDSA over SHA-256("<header>.<claims>").
 * Optional numeric `exp` (seconds) is enforced when present (upstream ignores it).
 */
import { isValidPublicKey, verify, type Signer } from '../crypto/secp256k1.js';

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const HEADER = { alg: 'secp256k1', typ: 'cylinder+jwt' } as const;

function b64json(v: unknown): string {
  return Buffer.from(JSON.stringify(v), 'utf8').toString('base64');
}

function decodeJsonObject(seg: string): Record<string, unknown> | null {
  if (!B64.test(seg) || seg.length % 4 !== 0) return null;
  try {
    const v = JSON.parse(Buffer.from(seg, 'base64').toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Builds `<header>.<claims>.<signature>` (without the `Cylinder:` prefix). */
export function makeCylinderJwt(signer: Signer, extraClaims: Record<string, string | number> = {}): string {
  const head = b64json(HEADER);
  const claims = b64json({ ...extraClaims, iss: signer.publicKey });
  const sigHex = signer.sign(Buffer.from(`${head}.${claims}`, 'ascii'));
  return `${head}.${claims}.${Buffer.from(sigHex, 'hex').toString('base64')}`;
}

/**
 * Tokens already verified, by their exact string: a client sends the same token with every
 * request, and its ECDSA check (with the public key's decompression) costs far more than the
 * request. The result of a token is a function of its bytes but for `exp`, which is kept and
 * checked on every use. Bounded: the oldest entry goes first.
 */
const VERIFIED_MAX = 1024;
const verified = new Map<string, { pub: string; exp: number | undefined }>();

/** Returns the lowercase public key the token proves, or null for any defect. */
export function verifyCylinderJwt(token: string, nowSec = Date.now() / 1000): string | null {
  const hit = verified.get(token);
  if (hit) {
    if (hit.exp === undefined || hit.exp > nowSec) return hit.pub;
    verified.delete(token);
    return null;
  }
  const pub = verifyUncached(token, nowSec);
  if (pub !== null) {
    if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value as string);
    const exp = decodeJsonObject(token.split('.')[1] ?? '')?.exp;
    verified.set(token, { pub, exp: typeof exp === 'number' ? exp : undefined });
  }
  return pub;
}

function verifyUncached(token: string, nowSec: number): string | null {
  if (token.length > 4096) return null;
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [h, c, s] = parts as [string, string, string];
  const header = decodeJsonObject(h);
  const claims = decodeJsonObject(c);
  if (!header || !claims || header.alg !== HEADER.alg || header.typ !== HEADER.typ) return null;
  const iss = claims.iss;
  if (typeof iss !== 'string') return null;
  const pub = iss.toLowerCase();
  if (!isValidPublicKey(pub)) return null;
  if (claims.exp !== undefined && !(typeof claims.exp === 'number' && claims.exp > nowSec)) return null;
  if (!B64.test(s) || s.length % 4 !== 0) return null;
  const sig = Buffer.from(s, 'base64');
  if (sig.length !== 64) return null;
  return verify(sig.toString('hex'), Buffer.from(`${h}.${c}`, 'ascii'), pub) ? pub : null;
}
