/**
 * The LMDB sub-databases of the node API (all named `node.*`) and their record types.
 * Records are our own shapes; the JSON a client sees is built field by field in the
 * route modules, so stored secrets (password hashes, provider tokens) never leak.
 */
import type { Database, RootDatabase } from 'lmdb';
import { nodeDbName } from '../store/names.js';
import { openStore } from '../store/checksum.js';
import type { AssignmentRecord, RoleRecord } from '../auth/rbac.js';

export type { AssignmentRecord, IdentityType, RoleRecord } from '../auth/rbac.js';

export interface UserRecord {
  user_id: string;
  username: string;
  /** bcrypt of sha256(hashed_password); never leaves this module's stores. */
  password_hash: string;
  /** Bumped by log out and password change: tokens carrying an older value are dead. */
  token_gen: number;
}

export interface KeyRecord {
  public_key: string;
  user_id: string;
  display_name: string;
  /** Opaque, client-encrypted; returned only to the key's owner. */
  encrypted_private_key: string;
}

export interface ProfileRecord {
  user_id: string;
  subject: string;
  name: string | null;
  given_name: string | null;
  family_name: string | null;
  email: string | null;
  picture: string | null;
}

export interface OAuthUserRecord {
  subject: string;
  user_id: string;
}

export interface OAuthSessionRecord {
  user_id: string;
  subject: string;
  /** The provider's tokens, used to re-check the session; never returned. */
  provider_access_token: string;
  provider_refresh_token: string | null;
  /** ms since the epoch. */
  last_authenticated: number;
}

export interface RegistryNodeRecord {
  identity: string;
  endpoints: string[];
  display_name: string;
  keys: string[];
  metadata: Record<string, string>;
}

export interface Stores {
  root: RootDatabase;
  users: Database<UserRecord, string>;
  /** username → user_id */
  usernames: Database<string, string>;
  /** `${user_id}/${public_key}` → key */
  keys: Database<KeyRecord, string>;
  profiles: Database<ProfileRecord, string>;
  /** subject → OAuth user */
  oauthUsers: Database<OAuthUserRecord, string>;
  /** sha256(access token) hex → session */
  oauthSessions: Database<OAuthSessionRecord, string>;
  /** `${user_id}/${session key}` → 1 */
  oauthSessionsByUser: Database<number, string>;
  roles: Database<RoleRecord, string>;
  /** `${identity_type}/${identity}` → assignment */
  assignments: Database<AssignmentRecord, string>;
  registry: Database<RegistryNodeRecord, string>;
  /** endpoint → identity of the node that uses it */
  registryEndpoints: Database<string, string>;
  /** node id, display name */
  meta: Database<string, string>;
}

export function openStores(root: RootDatabase): Stores {
  const db = <V>(name: string): Database<V, string> => openStore<V, string>(root, nodeDbName(name));
  return {
    root,
    users: db('users'),
    usernames: db('usernames'),
    keys: db('keys'),
    profiles: db('profiles'),
    oauthUsers: db('oauth_users'),
    oauthSessions: db('oauth_sessions'),
    oauthSessionsByUser: db('oauth_sessions_by_user'),
    roles: db('roles'),
    assignments: db('assignments'),
    registry: db('registry'),
    registryEndpoints: db('registry_endpoints'),
    meta: db('meta'),
  };
}

/** Range bounds of every key starting with `prefix` followed by '/'. */
export function prefixRange(prefix: string): { start: string; end: string } {
  return { start: `${prefix}/`, end: `${prefix}0` };
}
