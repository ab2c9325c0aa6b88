/**
 * The README walk (start, admin token from the CLI, create a user, grant a role, log in
 * as that user) plus a full run of the node API whose log must hold no secret.
 */
import t from 'tap';
import { nodeArgs } from './helpers/child.js';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { log } from '../src/log.js';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { makeCylinderJwt } from '../src/auth/cylinder.js';
import { captureStderr, startApiNode, type ApiNode } from './helpers/node-api.js';

const run = promisify(execFile);
const logs = captureStderr();
log.setLevel('debug');
let n: ApiNode = await startApiNode({ CAIRN_MAX_BODY_BYTES: '65536' });
t.teardown(async () => {
  logs.restore();
  await n.stop();
});
const call: ApiNode['call'] = (...args) => n.call(...args);
const cli = (dataDir: string): Promise<{ stdout: string; stderr: string }> =>
  run(process.execPath, nodeArgs('src/cli/token.ts', '--data-dir', dataDir), { cwd: process.cwd() });

let adminToken = '';

t.test('the token CLI prints a Cylinder token for the admin key', async (t) => {
  const { stdout } = await cli(n.t.dataDir);
  adminToken = stdout.trim();
  t.match(adminToken, /^Cylinder:[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/);
  const claims = JSON.parse(Buffer.from(adminToken.split('.')[1]!, 'base64').toString()) as { iss: string };
  t.equal(claims.iss, n.t.node.adminSigner.publicKey);
  const err = await cli(join(n.t.dataDir, 'nowhere')).then(
    () => null,
    (e: { code: number; stderr: string }) => e,
  );
  t.equal(err?.code, 2, 'fails without a data directory: an input error');
  t.match(err?.stderr, /admin\.priv does not exist/);
});

t.test('README walk: admin token, create a user, grant a role, log in as that user', async (t) => {
  const status = await call('GET', '/status', { auth: adminToken });
  t.equal(status.status, 200);
  t.same(Object.keys(status.body as object), ['version', 'node_id', 'display_name', 'service_endpoint', 'network_endpoints', 'advertised_endpoints']);
  const reg = await call('POST', '/biome/register', { body: { username: 'operator', hashed_password: 'walk-secret-1' } });
  const userId = (reg.body as { data: { user_id: string } }).data.user_id;
  const role = await call('POST', '/authorization/roles', {
    auth: adminToken,
    body: { role_id: 'operators', display_name: 'Operators', permissions: ['status.read', 'registry.read', 'registry.write'] },
  });
  t.equal(role.status, 200);
  const assign = await call('POST', '/authorization/assignments', {
    auth: adminToken,
    body: { identity_type: 'user', identity: userId, roles: ['operators'] },
  });
  t.equal(assign.status, 200);
  const login = await call('POST', '/biome/login', { body: { username: 'operator', hashed_password: 'walk-secret-1' } });
  const token = (login.body as { token: string }).token;
  t.equal((await call('GET', '/status', { auth: token })).status, 200, 'the user now reads status');
  t.equal((await call('GET', '/biome/users', { auth: token })).status, 403, 'but only what the role grants');
});

t.test('status in both versions; node id and display name are kept', async (t) => {
  const login0 = (await call('POST', '/biome/login', { body: { username: 'operator', hashed_password: 'walk-secret-1' } })).body;
  const a = await call('GET', '/status', { auth: adminToken, version: 1 });
  const b = await call('GET', '/status', { auth: adminToken, version: 2 });
  t.same(a.body, b.body);
  const s = b.body as Record<string, unknown>;
  t.equal(s.version, (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version);
  t.match(s.node_id, /^cairn-[0-9a-f]{8}$/);
  t.equal(s.display_name, `Node: ${String(s.node_id)}`);
  t.equal(s.service_endpoint, n.url);
  const bound = `tcp://127.0.0.1:${n.t.node.ports.network}`;
  t.same([s.network_endpoints, s.advertised_endpoints], [[bound], [bound]], 'the peer network endpoint, advertised as bound by default');
  const dir = n.t.dataDir;
  await n.t.stop({ keepData: true });
  n = await startApiNode({ CAIRN_ADVERTISED_ENDPOINT: 'tcp://10.0.0.1:8800' }, dir);
  const s2 = (await call('GET', '/status', { auth: n.admin })).body as Record<string, unknown>;
  t.equal(s2.node_id, s.node_id, 'generated node id kept across a restart');
  t.same([s2.network_endpoints, s2.advertised_endpoints], [[`tcp://127.0.0.1:${n.t.node.ports.network}`], ['tcp://10.0.0.1:8800']]);
  t.equal(n.admin, adminToken, 'same admin key after a restart');
  const l = await call('POST', '/biome/login', { body: { username: 'operator', hashed_password: 'walk-secret-1' } });
  t.equal((await call('GET', '/status', { auth: (l.body as { token: string }).token })).status, 200, 'users and grants survive a restart');
  t.equal((await call('GET', '/status', { auth: (login0 as { token: string }).token })).status, 200, 'tokens issued before the restart still work');
  await n.t.stop({ keepData: true });
  n = await startApiNode({ CAIRN_NODE_ID: 'alpha', CAIRN_DISPLAY_NAME: 'Alpha node', CAIRN_MAX_BODY_BYTES: '65536' }, dir);
  const s3 = (await call('GET', '/status', { auth: n.admin })).body as Record<string, unknown>;
  t.same([s3.node_id, s3.display_name], ['alpha', 'Alpha node'], 'configured values win');
});

t.test('a full run leaves no secret in the log', async (t) => {
  const c = call;
  const admin = `Cylinder:${makeCylinderJwt(n.t.node.adminSigner)}`;
  const passwords = ['full-run-pw-1', 'full-run-pw-2', 'full-run-wrong'];
  const userKey = new Signer(randomPrivateKey());
  const encrypted = 'ENCRYPTED-PRIVATE-KEY-BLOB-7f3a';
  await c('POST', '/biome/register', { body: { username: 'logcheck', hashed_password: passwords[0] } });
  await c('POST', '/biome/register', { body: { username: 'logcheck', hashed_password: passwords[0] } });
  await c('POST', '/biome/login', { body: { username: 'logcheck', hashed_password: passwords[2] } });
  const login = await c('POST', '/biome/login', { body: { username: 'logcheck', hashed_password: passwords[0] } });
  const { token, refresh_token: refresh, user_id: userId } = login.body as { token: string; refresh_token: string; user_id: string };
  await c('POST', '/biome/token', { body: { refresh_token: refresh } });
  await c('POST', '/biome/verify', { auth: token, body: { username: 'logcheck', hashed_password: passwords[0] } });
  await c('POST', '/biome/keys', { auth: token, body: { public_key: userKey.publicKey, encrypted_private_key: encrypted, display_name: 'k' } });
  await c('GET', '/biome/keys', { auth: token });
  await c('PUT', `/biome/users/${userId}`, {
    auth: admin,
    body: { username: 'logcheck', hashed_password: passwords[0], new_password: passwords[1], new_key_pairs: [] },
  });
  await c('POST', '/registry/nodes', {
    auth: admin,
    body: { identity: 'n1', endpoints: ['tcp://n1:1'], display_name: 'n1', keys: [userKey.publicKey], metadata: {} },
  });
  await c('GET', '/registry/nodes?filter=%7B', { auth: admin });
  await c('GET', '/status', { auth: `Cylinder:${makeCylinderJwt(userKey)}` });
  await c('GET', '/status', { auth: 'Bearer Biome:garbage' });
  await c('POST', '/biome/register', { raw: '{"username":"x","hashed_password":' });
  await c('POST', '/biome/register', { raw: JSON.stringify({ username: 'big', hashed_password: 'z'.repeat(70_000) }) });
  const l2 = await c('POST', '/biome/login', { body: { username: 'logcheck', hashed_password: passwords[1] } });
  await c('PATCH', '/biome/logout', { auth: (l2.body as { token: string }).token });
  await c('DELETE', `/biome/users/${userId}`, { auth: admin });

  const text = logs.text();
  t.ok(text.length > 200, 'the run did log');
  t.match(text, /user [0-9a-f-]{36} created/, 'log lines from the node API are captured');
  const keysDir = join(n.t.dataDir, 'keys');
  const fileSecret = (f: string): string => readFileSync(join(keysDir, f), 'utf8').trim();
  const needles: Record<string, string> = {
    'admin private key': fileSecret('admin.priv'),
    'validator private key': fileSecret('validator.priv'),
    'access token secret': fileSecret('access_token.secret'),
    'refresh token secret': fileSecret('refresh_token.secret'),
    'bcrypt hash marker': '$2b$',
    'access token': token.slice(6),
    'refresh token': refresh,
    'encrypted private key': encrypted,
    'admin cylinder signature': admin.split('.')[2]!,
  };
  for (const [i, p] of passwords.entries()) needles[`password ${i}`] = p;
  for (const [what, needle] of Object.entries(needles)) t.notOk(text.includes(needle), `log does not contain the ${what}`);
});
