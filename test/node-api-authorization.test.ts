import t from 'tap';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { makeCylinderJwt } from '../src/auth/cylinder.js';
import { startApiNode, registerAndLogin, VERSIONS, type ApiNode } from './helpers/node-api.js';

const n: ApiNode = await startApiNode();
t.teardown(() => n.stop());
const { call, admin } = n;
const adminKeysFile = n.t.node.config.adminKeysFile;

t.test('the admin key is in the admin keys file and holds every permission', async (t) => {
  t.match(readFileSync(adminKeysFile, 'utf8'), n.t.node.adminSigner.publicKey);
  for (const path of [
    '/status',
    '/biome/users',
    '/biome/profiles',
    '/oauth/users',
    '/registry/nodes',
    '/authorization/roles',
    '/authorization/assignments',
    '/authorization/permissions',
  ]) {
    t.equal((await call('GET', path, { auth: admin })).status, 200, path);
  }
});

t.test('permissions list', async (t) => {
  for (const v of VERSIONS) {
    const r = await call('GET', '/authorization/permissions', { version: v, auth: admin });
    t.equal(r.status, 200, `v${v}`);
    const ids = (r.body as { data: Array<{ permission_id: string; permission_display_name: string; permission_description: string }> }).data.map(
      (p) => p.permission_id,
    );
    for (const p of [
      'identity.user.read',
      'identity.user.write',
      'identity.profile.read',
      'circuit.read',
      'circuit.write',
      'registry.read',
      'registry.write',
      'statesvc.read',
      'statesvc.write',
      'oauth.user.read',
      'status.read',
    ]) {
      t.ok(ids.includes(p), `${p} listed`);
    }
  }
});

t.test('roles: create, list (paged), fetch, update, delete', async (t) => {
  for (const v of VERSIONS) {
    const o = { version: v, auth: admin };
    const id = `auditor-v${v}`;
    const add = await call('POST', '/authorization/roles', {
      ...o,
      body: { role_id: id, display_name: 'Auditor', permissions: ['status.read', 'registry.read'] },
    });
    t.equal(add.status, 200, `v${v} create`);
    t.equal(
      (await call('POST', '/authorization/roles', { ...o, body: { role_id: id, display_name: 'Again', permissions: ['status.read'] } })).status,
      409,
      'duplicate',
    );
    const list = await call('GET', '/authorization/roles?limit=1&offset=1', o);
    t.equal(list.status, 200);
    const lb = list.body as { data: Array<{ role_id: string }>; paging: Record<string, unknown> };
    t.equal(lb.data.length, 1);
    t.match(lb.paging, { offset: 1, limit: 1, current: '/authorization/roles?limit=1&offset=1', first: '/authorization/roles?limit=1&offset=0' });
    const all = await call('GET', '/authorization/roles', o);
    t.ok(
      (all.body as { data: Array<{ role_id: string }> }).data.some((r) => r.role_id === 'admin'),
      'built-in admin role listed',
    );
    const one = await call('GET', `/authorization/roles/${id}`, o);
    t.same(one.body, { data: { role_id: id, display_name: 'Auditor', permissions: ['status.read', 'registry.read'] } });
    const upd = await call('PATCH', `/authorization/roles/${id}`, { ...o, body: { display_name: 'Auditors', permissions: ['status.read'] } });
    t.equal(upd.status, 200, 'update');
    t.same((await call('GET', `/authorization/roles/${id}`, o)).body, {
      data: { role_id: id, display_name: 'Auditors', permissions: ['status.read'] },
    });
    t.equal((await call('PATCH', '/authorization/roles/admin', { ...o, body: { display_name: 'x' } })).status, 409, 'admin role is fixed');
    t.equal((await call('DELETE', '/authorization/roles/admin', o)).status, 409, 'admin role cannot go');
    t.equal((await call('PATCH', '/authorization/roles/none', { ...o, body: { display_name: 'x' } })).status, 404);
    t.equal((await call('DELETE', `/authorization/roles/${id}`, o)).status, 200, 'delete');
    t.equal((await call('GET', `/authorization/roles/${id}`, o)).status, 404);
  }
});

t.test('role payload validation', async (t) => {
  const bad: Array<[unknown, RegExp]> = [
    [{ display_name: 'x', permissions: ['status.read'] }, /Missing field "role_id"/],
    [{ role_id: 'r', display_name: 'x', permissions: [] }, /at least one permission/],
    [{ role_id: 'r', display_name: 'x', permissions: ['status.reed'] }, /unknown permission/],
    [{ role_id: 'r', display_name: 'x', permissions: 'status.read' }, /must be an array/],
    [{ role_id: '', display_name: 'x', permissions: ['status.read'] }, /must not be empty/],
  ];
  for (const [body, msg] of bad) {
    const r = await call('POST', '/authorization/roles', { auth: admin, body });
    t.equal(r.status, 400);
    t.match((r.body as { message: string }).message, msg);
  }
});

t.test('assignments grant role permissions to users and keys', async (t) => {
  for (const v of VERSIONS) {
    const o = { version: v, auth: admin };
    const u = await registerAndLogin(call, `assignee-v${v}`);
    const role = `reader-v${v}`;
    await call('POST', '/authorization/roles', { ...o, body: { role_id: role, display_name: 'Reader', permissions: ['registry.read'] } });
    t.equal((await call('GET', '/registry/nodes', { version: v, auth: u.token })).status, 403, 'no grant yet');
    const add = await call('POST', '/authorization/assignments', { ...o, body: { identity_type: 'user', identity: u.userId, roles: [role] } });
    t.equal(add.status, 200, `v${v} assign`);
    t.equal((await call('GET', '/registry/nodes', { version: v, auth: u.token })).status, 200, 'granted');
    t.equal((await call('GET', '/status', { version: v, auth: u.token })).status, 403, 'only that permission');
    t.equal(
      (await call('POST', '/authorization/assignments', { ...o, body: { identity_type: 'user', identity: u.userId, roles: [role] } })).status,
      409,
      'one assignment per identity',
    );
    const got = await call('GET', `/authorization/assignments/user/${u.userId}`, o);
    t.same(got.body, { data: { identity_type: 'user', identity: u.userId, roles: [role] } });
    t.equal((await call('GET', `/authorization/assignments/USER/${u.userId}`, o)).status, 200, 'identity type is case-insensitive');
    t.equal((await call('GET', `/authorization/assignments/group/${u.userId}`, o)).status, 400, 'unknown identity type');
    const list = await call('GET', '/authorization/assignments', o);
    t.ok((list.body as { data: Array<{ identity: string }> }).data.some((a) => a.identity === u.userId));
    t.equal((await call('PATCH', `/authorization/assignments/user/${u.userId}`, { ...o, body: { roles: ['admin'] } })).status, 200, 'update');
    t.equal((await call('GET', '/status', { version: v, auth: u.token })).status, 200, 'admin role grants everything');
    t.equal(
      (await call('PATCH', `/authorization/assignments/user/${u.userId}`, { ...o, body: { roles: ['no-such-role'] } })).status,
      400,
      'unknown role',
    );
    t.equal((await call('PATCH', '/authorization/assignments/user/nobody', { ...o, body: { roles: ['admin'] } })).status, 404);
    t.equal((await call('DELETE', `/authorization/assignments/user/${u.userId}`, o)).status, 200, 'delete');
    t.equal((await call('GET', '/status', { version: v, auth: u.token })).status, 403, 'grant gone');
    t.equal((await call('GET', `/authorization/assignments/user/${u.userId}`, o)).status, 404);
  }
  const k = new Signer(randomPrivateKey());
  await call('POST', '/authorization/roles', { auth: admin, body: { role_id: 'statusers', display_name: 'S', permissions: ['status.read'] } });
  await call('POST', '/authorization/assignments', { auth: admin, body: { identity_type: 'key', identity: k.publicKey, roles: ['statusers'] } });
  t.equal((await call('GET', '/status', { auth: `Cylinder:${makeCylinderJwt(k)}` })).status, 200, 'key identity granted by role');
  t.equal((await call('DELETE', '/authorization/roles/statusers', { auth: admin })).status, 200);
  t.same(
    (await call('GET', `/authorization/assignments/key/${k.publicKey}`, { auth: admin })).body,
    { data: { identity_type: 'key', identity: k.publicKey, roles: [] } },
    'deleting a role removes it from assignments',
  );
  t.equal((await call('GET', '/status', { auth: `Cylinder:${makeCylinderJwt(k)}` })).status, 403);
});

t.test('authorization routes need their permissions', async (t) => {
  const u = await registerAndLogin(call, 'plain');
  for (const [m, p] of [
    ['GET', '/authorization/roles'],
    ['POST', '/authorization/roles'],
    ['GET', '/authorization/assignments'],
    ['POST', '/authorization/assignments'],
    ['GET', '/authorization/permissions'],
  ] as const) {
    const body = m === 'POST' ? {} : undefined;
    t.equal((await call(m, p, { auth: u.token, body })).status, 403, `${m} ${p}`);
    t.equal((await call(m, p, { body })).status, 401, `${m} ${p} anonymous`);
  }
});

t.test('the admin keys file is re-read when it changes', async (t) => {
  const k = new Signer(randomPrivateKey());
  const tok = `Cylinder:${makeCylinderJwt(k)}`;
  t.equal((await call('GET', '/biome/users', { auth: tok })).status, 403, 'not listed');
  const original = readFileSync(adminKeysFile, 'utf8');
  appendFileSync(adminKeysFile, `# a comment\n\n  ${k.publicKey.toUpperCase()}  \n`);
  t.equal((await call('GET', '/biome/users', { auth: tok })).status, 200, 'listed → every permission');
  writeFileSync(adminKeysFile, original);
  t.equal((await call('GET', '/biome/users', { auth: tok })).status, 403, 'removed again');
  t.equal((await call('GET', '/biome/users', { auth: admin })).status, 200, 'original admin still there');
  const u = await registerAndLogin(call, 'not-a-key');
  t.equal((await call('GET', '/biome/users', { auth: u.token })).status, 403, 'the file grants keys only');
});
