/**
 * Helpers for the node API tests: a real node (startTestNode) with a cheap bcrypt
 * cost and a short login backoff, an admin Cylinder token, and a small JSON client.
 */
import { startTestNode, type TestNode } from './node.js';
import { makeCylinderJwt } from '../../src/auth/cylinder.js';
import { client, type Call } from './http-client.js';

export { client, type ApiResponse, type Call, type CallOptions } from './http-client.js';

export interface ApiNode {
  t: TestNode;
  url: string;
  call: Call;
  /** `Cylinder:<jwt>` of the node's admin key. */
  admin: string;
  stop(): Promise<void>;
}

/** `dataDir` reuses a directory (e.g. one kept by `stop({ keepData: true })`). */
export async function startApiNode(env: Record<string, string> = {}, dataDir?: string): Promise<ApiNode> {
  // Every test client shares 127.0.0.1: the per-address throttle is tested on its own.
  const t = await startTestNode({ CAIRN_BCRYPT_COST: '4', CAIRN_LOGIN_BACKOFF_MS: '300', CAIRN_LOGIN_ADDRESS_FAILURES: '1000', ...env }, dataDir);
  return {
    t,
    url: t.nodeUrl,
    call: client(t.nodeUrl),
    admin: `Cylinder:${makeCylinderJwt(t.node.adminSigner)}`,
    stop: () => t.stop(),
  };
}

export interface LoggedIn {
  userId: string;
  token: string;
  refresh: string;
}

export async function registerAndLogin(call: Call, username: string, password = `pw-of-${username}`): Promise<LoggedIn> {
  const reg = await call('POST', '/biome/register', { body: { username, hashed_password: password } });
  if (reg.status !== 200) throw new Error(`register ${username}: ${reg.status} ${reg.text}`);
  const res = await call('POST', '/biome/login', { body: { username, hashed_password: password } });
  if (res.status !== 200) throw new Error(`login ${username}: ${res.status} ${res.text}`);
  const b = res.body as { user_id: string; token: string; refresh_token: string };
  return { userId: b.user_id, token: b.token, refresh: b.refresh_token };
}

/** Gives `identity` (a user id or public key) the built-in admin role or the listed permissions. */
export async function grant(call: Call, admin: string, type: 'user' | 'key', identity: string, permissions: string[] | 'admin'): Promise<void> {
  let role = 'admin';
  if (permissions !== 'admin') {
    role = `r-${identity.slice(0, 12)}-${Math.random().toString(36).slice(2, 8)}`;
    const r = await call('POST', '/authorization/roles', { auth: admin, body: { role_id: role, display_name: role, permissions } });
    if (r.status !== 200) throw new Error(`role: ${r.status} ${r.text}`);
  }
  const a = await call('POST', '/authorization/assignments', { auth: admin, body: { identity_type: type, identity, roles: [role] } });
  if (a.status !== 200) throw new Error(`assignment: ${a.status} ${a.text}`);
}

export const VERSIONS = [1, 2] as const;

/** Records (instead of printing) everything written to stderr, where src/log.ts writes, from now on. */
export function captureStderr(): { text(): string; restore(): void } {
  const chunks: string[] = [];
  const original = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    const cb = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
    cb?.();
    return true;
  }) as typeof process.stderr.write;
  return {
    text: () => chunks.join(''),
    restore: () => {
      process.stderr.write = original;
    },
  };
}
