/**
 * Names and keys of the read model's sub-databases. The projector writes records under
 * these keys and the data API looks them up with the same functions, so key order is a
 * stable listing order for both.
 */
import { createHash } from 'node:crypto';

/** Sub-database names of the read model (every sub-database name lives in store/names.ts). */
export { GRID_DB } from '../../store/names.js';

/**
 * Separates the parts of composite keys; sorts before every printable character. Not
 * \u0001..\u0004: LMDB's ordered-binary key encoding escapes those in strings shorter
 * than 64 characters but not in longer ones, so such a separator would give one prefix
 * two byte forms and break prefix ranges.
 */
export const KEY_SEP = '\u0005';

/**
 * LMDB keys are limited to 1,978 bytes and ids come from users, so a long key keeps its
 * first 256 characters (for ordering) and ends in a hash of the whole (for uniqueness).
 */
const MAX_KEY_BYTES = 1024;

export function safeKey(key: string): string {
  if (Buffer.byteLength(key, 'utf8') <= MAX_KEY_BYTES) return key;
  return `${key.slice(0, 256)}\u0002${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

/** Starts an escape inside a key part; followed by '0'..'6' for \u0000..\u0006. */
const KEY_ESC = '\u0006';

/**
 * One part of a composite key. Characters up to \u0006 (the separator, the escape, and
 * those LMDB encodes by length or safeKey uses) become the escape plus a digit, so an
 * encoded part holds no separator and no character below \u0005: parts joined by the
 * separator split back one way only, and no id can pass for another (an organization
 * `acme\u0005x` is not a prefix of acme's agents).
 */
function keyPart(part: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return part.replace(/[\u0000-\u0006]/g, (c) => KEY_ESC + String.fromCharCode(48 + c.charCodeAt(0)));
}

/** The read-model key of a record named by `parts` (injective, order kept per part). */
function compositeKey(...parts: string[]): string {
  return safeKey(parts.map(keyPart).join(KEY_SEP));
}

/** The range prefix of every key whose leading parts are `parts`. */
function keyPrefix(...parts: string[]): string {
  return parts.map(keyPart).join(KEY_SEP) + KEY_SEP;
}

/** Keys of the read-model records (the data API uses the same functions to look up). */
export const gridKeys = {
  organization: (orgId: string): string => compositeKey(orgId),
  agent: (orgId: string, publicKey: string): string => compositeKey(orgId, publicKey),
  agentByKey: (publicKey: string): string => compositeKey(publicKey),
  role: (orgId: string, name: string): string => compositeKey(orgId, name),
  alternateId: (idType: string, id: string): string => compositeKey(idType, id),
  schema: (name: string): string => compositeKey(name),
  product: (productId: string): string => compositeKey(productId),
  location: (locationId: string): string => compositeKey(locationId),
  purchaseOrder: (uid: string): string => compositeKey(uid),
  poVersion: (uid: string, versionId: string): string => compositeKey(uid, versionId),
  /** Revision numbers are zero-padded so that key order is numeric order. */
  poRevision: (uid: string, versionId: string, revision: number): string => compositeKey(uid, versionId, String(revision).padStart(10, '0')),
  /** Looked up by the `<id_type>:<id>` text a client sends, so that text is one part. */
  poAlternateId: (idType: string, id: string, uid: string): string => compositeKey(`${idType}:${id}`, uid),
} as const;

/** Range prefixes of the listings by leading key parts. */
export const gridPrefixes = {
  agentsOf: (orgId: string): string => keyPrefix(orgId),
  rolesOf: (orgId: string): string => keyPrefix(orgId),
  versionsOf: (uid: string): string => keyPrefix(uid),
  revisionsOf: (uid: string, versionId: string): string => keyPrefix(uid, versionId),
  poByAlternateId: (alternateId: string): string => keyPrefix(alternateId),
} as const;

/**
 * The role record an agent's role name refers to: `<org>.<role>` names another
 * organization's role (role names hold no '.', so the last one splits), a bare name one
 * of the agent's own organization.
 */
export function agentRoleKey(agentOrgId: string, roleName: string): string {
  const dot = roleName.lastIndexOf('.');
  if (dot < 0) return gridKeys.role(agentOrgId, roleName);
  return gridKeys.role(roleName.slice(0, dot), roleName.slice(dot + 1));
}
