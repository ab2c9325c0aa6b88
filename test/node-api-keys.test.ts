import t from 'tap';
import { startApiNode, registerAndLogin, VERSIONS, type ApiNode } from './helpers/node-api.js';

const n: ApiNode = await startApiNode();
t.teardown(() => n.stop());
const { call, admin } = n;
const pk = (i: number): string => `03${i.toString(16).padStart(2, '0').repeat(32)}`;
const key = (i: number, name = `key ${i}`): { public_key: string; encrypted_private_key: string; display_name: string } => ({
  public_key: pk(i),
  encrypted_private_key: `{"iv":"${i}","ct":"opaque"}`,
  display_name: name,
});

t.test('add, list, fetch, rename, delete own keys in both versions', async (t) => {
  for (const v of VERSIONS) {
    const u = await registerAndLogin(call, `kim-v${v}`);
    const opts = { version: v, auth: u.token };
    t.same((await call('GET', '/biome/keys', opts)).body, [], `v${v} starts empty`);

    const add = await call('POST', '/biome/keys', { ...opts, body: { ...key(1), user_id: 'ignored' } });
    t.equal(add.status, 200, `v${v} add`);
    t.same(add.body, { message: 'Key added successfully', data: { ...key(1), user_id: u.userId } });
    t.equal((await call('POST', '/biome/keys', { ...opts, body: key(1) })).status, 400, 'duplicate key');
    await call('POST', '/biome/keys', { ...opts, body: key(2) });

    const list = await call('GET', '/biome/keys', opts);
    t.equal(list.status, 200);
    t.same(
      list.body,
      [
        { ...key(1), user_id: u.userId },
        { ...key(2), user_id: u.userId },
      ],
      `v${v} list is a bare array of Key`,
    );

    const one = await call('GET', `/biome/keys/${pk(1)}`, opts);
    t.same(one.body, { data: { ...key(1), user_id: u.userId } }, `v${v} fetch`);
    t.equal((await call('GET', `/biome/keys/${pk(9)}`, opts)).status, 404);

    const ren = await call('PATCH', '/biome/keys', { ...opts, body: { public_key: pk(1), new_display_name: 'renamed' } });
    t.same([ren.status, ren.body], [200, { message: 'Key updated successfully' }], `v${v} rename`);
    t.equal(((await call('GET', `/biome/keys/${pk(1)}`, opts)).body as { data: { display_name: string } }).data.display_name, 'renamed');
    t.equal((await call('PATCH', '/biome/keys', { ...opts, body: { public_key: pk(9), new_display_name: 'x' } })).status, 404);

    const del = await call('DELETE', `/biome/keys/${pk(2)}`, opts);
    t.same([del.status, del.body], [200, { message: 'Key successfully deleted', data: { ...key(2), user_id: u.userId } }], `v${v} delete`);
    t.equal((await call('DELETE', `/biome/keys/${pk(2)}`, opts)).status, 404);
    t.equal(Array.isArray((await call('GET', '/biome/keys', opts)).body) ? 1 : 0, 1);
  }
});

t.test('replace all keys: protocol 2 only', async (t) => {
  const u = await registerAndLogin(call, 'rita');
  await call('POST', '/biome/keys', { auth: u.token, body: key(1) });
  const v1 = await call('PUT', '/biome/keys', { version: 1, auth: u.token, body: [key(5)] });
  t.equal(v1.status, 400, 'version 1 has no replace-all');
  t.match((v1.body as { message: string }).message, /protocol version 2/);
  const put = await call('PUT', '/biome/keys', { version: 2, auth: u.token, body: [key(5), key(6)] });
  t.same([put.status, put.body], [200, { message: 'Keys replaced successfully' }]);
  t.same((await call('GET', '/biome/keys', { auth: u.token })).body, [
    { ...key(5), user_id: u.userId },
    { ...key(6), user_id: u.userId },
  ]);
  const noHeader = await call('PUT', '/biome/keys', { auth: u.token, body: [] });
  t.equal(noHeader.status, 200, 'absent header means version 2');
  t.same((await call('GET', '/biome/keys', { auth: u.token })).body, []);
  const dup = await call('PUT', '/biome/keys', { auth: u.token, body: [key(7), key(7)] });
  t.equal(dup.status, 400, 'duplicates within the list');
  t.equal((await call('PUT', '/biome/keys', { auth: u.token, body: { not: 'an array' } })).status, 400);
  t.equal((await call('PUT', '/biome/keys', { version: 2 })).status, 401, 'needs credentials');
});

t.test('a user sees and changes only their own keys', async (t) => {
  const a = await registerAndLogin(call, 'owner-a');
  const b = await registerAndLogin(call, 'owner-b');
  await call('POST', '/biome/keys', { auth: a.token, body: key(20) });
  t.same((await call('GET', '/biome/keys', { auth: b.token })).body, [], "b does not see a's keys");
  t.equal((await call('GET', `/biome/keys/${pk(20)}`, { auth: b.token })).status, 404);
  t.equal((await call('DELETE', `/biome/keys/${pk(20)}`, { auth: b.token })).status, 404);
  t.equal((await call('PATCH', '/biome/keys', { auth: b.token, body: { public_key: pk(20), new_display_name: 'mine' } })).status, 404);
  await call('PUT', '/biome/keys', { auth: b.token, body: [] });
  const still = await call('GET', `/biome/keys/${pk(20)}`, { auth: a.token });
  t.same(still.body, { data: { ...key(20), user_id: a.userId } }, "a's key untouched");
  const same = await call('POST', '/biome/keys', { auth: b.token, body: key(20) });
  t.equal(same.status, 200, 'the same public key may belong to two users');
  t.equal((await call('GET', '/biome/keys', { auth: admin })).status, 403, 'a key identity has no keys');
});

t.test('bad key input', async (t) => {
  const u = await registerAndLogin(call, 'bad-input');
  const cases: Array<[string, unknown, RegExp]> = [
    ['missing public_key', { display_name: 'x' }, /Missing field "public_key"/],
    ['non-hex public_key', { public_key: 'zz', display_name: 'x' }, /hex/],
    ['wrong type', { public_key: pk(1), display_name: 5 }, /"display_name" must be a string/],
    ['array body', [key(1)], /JSON object/],
  ];
  for (const [what, body, msg] of cases) {
    const r = await call('POST', '/biome/keys', { auth: u.token, body });
    t.equal(r.status, 400, what);
    t.match((r.body as { message: string }).message, msg);
  }
  t.equal((await call('POST', '/biome/keys', { auth: u.token, raw: '{"public_key":' })).status, 400, 'malformed JSON');
  t.equal((await call('PATCH', '/biome/keys', { auth: u.token, body: { public_key: pk(1) } })).status, 400, 'missing new_display_name');
  const put = await call('PUT', '/biome/keys', { auth: u.token, body: [key(1), { display_name: 'no key' }] });
  t.equal(put.status, 400);
  t.match((put.body as { message: string }).message, /\[1\]\.public_key/);
});

t.test('protocol version 1 delete-key: DELETE /biome/users/{user_id}/keys/{public_key}', async (t) => {
  const a = await registerAndLogin(call, 'v1-del-a');
  const b = await registerAndLogin(call, 'v1-del-b');
  await call('POST', '/biome/keys', { auth: a.token, body: key(30) });
  await call('POST', '/biome/keys', { auth: a.token, body: key(31) });
  const path = (user: string, i: number): string => `/biome/users/${user}/keys/${pk(i)}`;

  const other = await call('DELETE', path(a.userId, 30), { version: 1, auth: b.token });
  t.equal(other.status, 403, "b cannot delete a's key");
  t.same(other.body, { message: `A user can delete only its own keys; the path names user ${a.userId}` });
  t.equal((await call('DELETE', path(a.userId, 30), { version: 1 })).status, 401, 'needs credentials in version 1 too');
  t.equal((await call('DELETE', path(a.userId, 30), { version: 1, auth: admin })).status, 403, 'a key identity owns no keys');

  const del = await call('DELETE', path(a.userId, 30), { version: 1, auth: a.token });
  t.same([del.status, del.body], [200, { message: 'Key successfully deleted', data: { ...key(30), user_id: a.userId } }]);
  t.equal((await call('DELETE', path(a.userId, 30), { version: 1, auth: a.token })).status, 404, 'gone');
  t.equal((await call('DELETE', path(a.userId, 31), { version: 2, auth: a.token })).status, 200, 'served under version 2 as well');
  t.same((await call('GET', '/biome/keys', { auth: a.token })).body, []);
});

t.test('replace-all-keys: a key without public_key is a 400 naming the field', async (t) => {
  const u = await registerAndLogin(call, 'replace-needs-pk');
  await call('POST', '/biome/keys', { auth: u.token, body: key(40) });
  const r = await call('PUT', '/biome/keys', { auth: u.token, body: [key(41), { display_name: 'no key', encrypted_private_key: 'x' }] });
  t.equal(r.status, 400);
  t.same(r.body, { message: 'Missing field "[1].public_key"' });
  t.same((await call('GET', '/biome/keys', { auth: u.token })).body, [{ ...key(40), user_id: u.userId }], 'keys unchanged');
});
