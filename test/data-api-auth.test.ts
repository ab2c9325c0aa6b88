/**
 * The data API with authorization on (CAIRN_DATA_AUTH=on): credentials from the node API
 * (Cylinder admin token, Biome users with roles), data.read / data.write /
 * data.sign.<key> permissions, 401 and 403 in B's {message} shape, over real HTTP.
 */
import t from 'tap';
import { loadConfig } from '../src/config.js';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { makeCylinderJwt } from '../src/auth/cylinder.js';
import { startApiNode, registerAndLogin, grant, client, type ApiNode } from './helpers/node-api.js';
import { agentKey, PREFIX_A } from './helpers/data-api.js';

const n: ApiNode = await startApiNode({ CAIRN_DATA_AUTH: 'on' });
t.teardown(() => n.stop());
const a = client(n.url);
const b = client(n.t.dataUrl);
const ORG = { data: [{ id: 'acme', name: 'Acme Corp', alternate_ids: [`gs1_company_prefix:${PREFIX_A}`] }] };

t.test('the default follows the bind address', async (t) => {
  t.equal(loadConfig([], { CAIRN_DATA_BIND: '127.0.0.1:8080' }).dataAuth, false, 'loopback: off');
  t.equal(loadConfig([], { CAIRN_DATA_BIND: '[::1]:8080' }).dataAuth, false, 'IPv6 loopback: off');
  t.equal(loadConfig([], { CAIRN_DATA_BIND: '0.0.0.0:8080' }).dataAuth, true, 'every address: on');
  t.equal(loadConfig([], { CAIRN_DATA_BIND: '10.1.2.3:8080' }).dataAuth, true, 'a LAN address: on');
  t.equal(loadConfig(['--data-auth', 'off'], { CAIRN_DATA_BIND: '0.0.0.0:8080' }).dataAuth, false, 'flag wins');
  t.equal(loadConfig([], { CAIRN_DATA_AUTH: 'on' }).dataAuth, true, 'env turns it on on loopback');
  t.throws(() => loadConfig([], { CAIRN_DATA_AUTH: 'maybe' }), /data auth: expected on or off/);
});

t.test('no credentials: 401 with a message that says what is expected', async (t) => {
  for (const [m, p, body] of [
    ['GET', '/organization', undefined],
    ['POST', '/organization?wait=5', ORG],
    ['GET', `/batch_statuses?id=${'a'.repeat(128)}`, undefined],
  ] as const) {
    const r = await b(m, p, { body });
    t.equal(r.status, 401, `${m} ${p}`);
    t.match((r.body as { message: string }).message, /Bearer Biome:.*Bearer Cylinder:.*Bearer OAuth2:/, 'names the accepted credentials');
    t.same(Object.keys(r.body as object), ['message'], "B's error shape");
  }
  const bad = await b('GET', '/organization', { auth: 'Bearer Cylinder:not.a.jwt' });
  t.equal(bad.status, 401, 'an invalid token');
  t.notMatch(bad.text, /not\.a\.jwt/, 'the token is not echoed');
  t.equal((await b('GET', '/organization', { auth: 'Basic Zm9vOmJhcg==' })).status, 401, 'another scheme');
  t.equal(n.t.node.ledger.pendingCount, 0, 'nothing submitted');
});

t.test('admin key: reads and writes', async (t) => {
  const w = await b('POST', '/organization?wait=10', { auth: n.admin, body: ORG });
  t.equal(w.status, 200, 'write accepted');
  t.equal((w.body as { status: string }).status, 'COMMITTED');
  const r = await b('GET', '/organization/acme', { auth: n.admin });
  t.equal(r.status, 200);
  t.equal((r.body as { id: string }).id, 'acme');
});

t.test('a token without the permission: 403', async (t) => {
  const u = await registerAndLogin(a, 'no-grants');
  const r = await b('GET', '/organization', { auth: u.token });
  t.equal(r.status, 403);
  t.match((r.body as { message: string }).message, /data\.read/);
  const k = new Signer(randomPrivateKey());
  t.equal((await b('GET', '/organization', { auth: `Cylinder:${makeCylinderJwt(k)}` })).status, 403, 'an unknown key');
});

t.test('a role with data.read only: reads work, writes are 403', async (t) => {
  const u = await registerAndLogin(a, 'reader');
  await grant(a, n.admin, 'user', u.userId, ['data.read']);
  t.equal((await b('GET', '/organization', { auth: u.token })).status, 200, 'list');
  t.equal((await b('GET', '/organization/acme', { auth: u.token })).status, 200, 'fetch');
  const before = n.t.node.ledger.head.blockNum + n.t.node.ledger.pendingCount;
  const w = await b('PUT', '/organization/acme?wait=5', { auth: u.token, body: { name: 'Renamed' } });
  t.equal(w.status, 403);
  t.match((w.body as { message: string }).message, /data\.write/);
  t.equal(n.t.node.ledger.head.blockNum + n.t.node.ledger.pendingCount, before, 'nothing submitted');
});

t.test('?signer= needs a grant for that key', async (t) => {
  const granted = agentKey(n.t.dataDir, 'granted');
  const other = agentKey(n.t.dataDir, 'other');
  const k = new Signer(randomPrivateKey());
  const tok = `Cylinder:${makeCylinderJwt(k)}`;
  await grant(a, n.admin, 'key', k.publicKey, ['data.read', 'data.write', `data.sign.${granted.publicKey}`]);
  const org = (id: string): unknown => ({ data: [{ id, name: id }] });
  const ok = await b('POST', `/organization?wait=10&signer=${granted.publicKey}`, { auth: tok, body: org('beta') });
  t.equal(ok.status, 200, 'the granted key signs');
  t.equal((ok.body as { status: string }).status, 'COMMITTED');
  const no = await b('POST', `/organization?wait=10&signer=${other.publicKey}`, { auth: tok, body: org('gamma') });
  t.equal(no.status, 403, 'a key not granted');
  t.match((no.body as { message: string }).message, new RegExp(`data\\.sign\\.${other.publicKey}`));
  t.equal((await b('GET', '/organization/gamma', { auth: tok })).status, 404, 'nothing written');
  // The node's key is acme's admin (it made acme above).
  const plain = await b('PUT', '/organization/acme?wait=10', { auth: tok, body: { name: 'Acme Renamed' } });
  t.equal(plain.status, 200, 'data.write alone signs with the node key');
  t.equal((plain.body as { status: string }).status, 'COMMITTED');
  const any = await b('POST', `/organization?wait=10&signer=${other.publicKey}`, { auth: n.admin, body: org('gamma') });
  t.equal(any.status, 200, 'admin signs with any held key');
});

t.test('data.sign permissions are accepted in roles', async (t) => {
  const bad = await a('POST', '/authorization/roles', { auth: n.admin, body: { role_id: 'x', display_name: 'x', permissions: ['data.sign.nope'] } });
  t.equal(bad.status, 400, 'a malformed key is not a permission');
  const list = await a('GET', '/authorization/permissions', { auth: n.admin });
  const ids = (list.body as { data: Array<{ permission_id: string }> }).data.map((p) => p.permission_id);
  for (const p of ['data.read', 'data.write', 'data.sign.*']) t.ok(ids.includes(p), `${p} listed`);
});
