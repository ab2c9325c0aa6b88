import t from 'tap';
import { startApiNode, registerAndLogin, grant, VERSIONS, type ApiNode } from './helpers/node-api.js';

const n: ApiNode = await startApiNode({ CAIRN_MAX_BODY_BYTES: '65536' });
t.teardown(() => n.stop());
const { call, admin } = n;

t.test('register and log in, both protocol versions', async (t) => {
  for (const v of VERSIONS) {
    const username = `alice-v${v}@example.com`;
    const reg = await call('POST', '/biome/register', { version: v, body: { username, hashed_password: 'h1' } });
    t.equal(reg.status, 200, `v${v} register`);
    const data = reg.body as { message: string; data: { user_id: string; username: string } };
    t.equal(data.message, 'User created successfully');
    t.same(Object.keys(data.data).sort(), ['user_id', 'username']);
    t.equal(data.data.username, username);
    t.match(data.data.user_id, /^[0-9a-f-]{36}$/);

    const dup = await call('POST', '/biome/register', { version: v, body: { username, hashed_password: 'other' } });
    t.equal(dup.status, 409, `v${v} duplicate username`);

    const login = await call('POST', '/biome/login', { version: v, body: { username, hashed_password: 'h1' } });
    t.equal(login.status, 200, `v${v} login`);
    const b = login.body as Record<string, string>;
    t.same(Object.keys(b).sort(), ['message', 'refresh_token', 'token', 'user_id']);
    t.equal(b.message, 'Successful login');
    t.equal(b.user_id, data.data.user_id);
    t.match(b.token, /^Biome:[\w-]+\.[\w-]+\.[\w-]+$/);
    t.match(b.refresh_token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    t.notOk(login.text.includes('$2b$'), 'no bcrypt hash in the answer');
  }
});

t.test('failed logins do not tell whether the username exists', async (t) => {
  await registerAndLogin(call, 'bob', 'right');
  const wrong = await call('POST', '/biome/login', { body: { username: 'bob', hashed_password: 'wrong' } });
  const unknown = await call('POST', '/biome/login', { body: { username: 'nobody-here', hashed_password: 'wrong' } });
  t.equal(wrong.status, 401);
  t.equal(unknown.status, 401);
  t.equal(wrong.text, unknown.text, 'identical bodies');
  t.same(wrong.body, { message: 'Invalid username or password' });
});

t.test('refresh token, both field names and versions', async (t) => {
  const u = await registerAndLogin(call, 'carol');
  for (const v of VERSIONS) {
    for (const field of ['refresh_token', 'token']) {
      const r = await call('POST', '/biome/token', { version: v, body: { [field]: u.refresh } });
      t.equal(r.status, 200, `v${v} ${field}`);
      const tok = (r.body as { token: string }).token;
      t.match(tok, /^Biome:/);
      const me = await call('GET', '/biome/keys', { version: v, auth: tok });
      t.equal(me.status, 200, 'new access token works');
    }
  }
  const asAccess = await call('POST', '/biome/token', { body: { refresh_token: u.token.slice(6) } });
  t.equal(asAccess.status, 401, 'an access token is not a refresh token');
  const missing = await call('POST', '/biome/token', { body: {} });
  t.equal(missing.status, 400);
  const refreshAsAccess = await call('GET', '/biome/keys', { auth: `Biome:${u.refresh}` });
  t.equal(refreshAsAccess.status, 401, 'a refresh token is not an access token');
});

t.test('verify credentials checks only the caller', async (t) => {
  const d = await registerAndLogin(call, 'dave', 'dpw');
  await registerAndLogin(call, 'erin', 'epw');
  for (const v of VERSIONS) {
    const ok = await call('POST', '/biome/verify', { version: v, auth: d.token, body: { username: 'dave', hashed_password: 'dpw' } });
    t.equal(ok.status, 200, `v${v}`);
    t.same(ok.body, { message: 'Successful verification', user_id: d.userId });
    const bad = await call('POST', '/biome/verify', { version: v, auth: d.token, body: { username: 'dave', hashed_password: 'nope' } });
    t.equal(bad.status, 401);
    const other = await call('POST', '/biome/verify', { version: v, auth: d.token, body: { username: 'erin', hashed_password: 'epw' } });
    t.equal(other.status, 401, "cannot test another user's password");
    const anon = await call('POST', '/biome/verify', { version: v, body: { username: 'dave', hashed_password: 'dpw' } });
    t.equal(anon.status, 401, 'needs credentials');
  }
  const key = await call('POST', '/biome/verify', { auth: admin, body: { username: 'dave', hashed_password: 'dpw' } });
  t.equal(key.status, 403, 'a key identity is not a user');
});

t.test('log out kills every access and refresh token of the user at once', async (t) => {
  for (const v of VERSIONS) {
    const name = `frank-v${v}`;
    const a = await registerAndLogin(call, name);
    const second = await call('POST', '/biome/login', { body: { username: name, hashed_password: `pw-of-${name}` } });
    const b = second.body as { token: string; refresh_token: string };
    const out = await call('PATCH', '/biome/logout', { version: v, auth: a.token });
    t.equal(out.status, 200, `v${v} logout`);
    t.same(out.body, { message: 'User successfully logged out' });
    for (const tok of [a.token, b.token]) t.equal((await call('GET', '/biome/keys', { auth: tok })).status, 401, 'access token dead');
    for (const rt of [a.refresh, b.refresh_token])
      t.equal((await call('POST', '/biome/token', { body: { refresh_token: rt } })).status, 401, 'refresh token dead');
    const again = await call('POST', '/biome/login', { body: { username: name, hashed_password: `pw-of-${name}` } });
    const fresh = (again.body as { token: string }).token;
    t.equal((await call('GET', '/biome/keys', { auth: fresh })).status, 200, 'a new login works');
  }
  t.equal((await call('PATCH', '/biome/logout', {})).status, 401, 'logout needs credentials');
  t.equal((await call('PATCH', '/biome/logout', { auth: admin })).status, 403, 'logout needs a Biome token');
});

t.test('list, fetch, update, delete users', async (t) => {
  const boss = await registerAndLogin(call, 'boss');
  const nobody = await registerAndLogin(call, 'nobody');
  await grant(call, admin, 'user', boss.userId, ['identity.user.read', 'identity.user.write']);
  for (const v of VERSIONS) {
    const name = `gina-v${v}`;
    const g = await registerAndLogin(call, name, 'old');
    const list = await call('GET', '/biome/users', { version: v, auth: boss.token });
    t.equal(list.status, 200, `v${v} list`);
    t.ok(Array.isArray(list.body));
    t.same(
      (list.body as unknown[]).find((u) => (u as { user_id: string }).user_id === g.userId),
      { username: name, user_id: g.userId },
    );
    t.notOk(list.text.includes('password'), 'no password material');
    const one = await call('GET', `/biome/users/${g.userId}`, { version: v, auth: boss.token });
    t.same(one.body, { username: name, user_id: g.userId }, `v${v} fetch`);
    t.equal((await call('GET', '/biome/users/not-a-user', { version: v, auth: boss.token })).status, 404);

    const key = { public_key: `02${'ab'.repeat(32)}`, encrypted_private_key: 'ciphertext', display_name: 'k1' };
    const upd = await call('PUT', `/biome/users/${g.userId}`, {
      version: v,
      auth: boss.token,
      body: { username: name, hashed_password: 'old', new_password: 'new', new_key_pairs: [key] },
    });
    t.equal(upd.status, 200, `v${v} update`);
    t.same(upd.body, { message: 'Credentials and key updated successfully', data: [{ ...key, user_id: g.userId }] });
    t.equal((await call('GET', '/biome/keys', { auth: g.token })).status, 401, 'password change ends old sessions');
    t.equal((await call('POST', '/biome/login', { body: { username: name, hashed_password: 'old' } })).status, 401, 'old password gone');
    const relog = await call('POST', '/biome/login', { body: { username: name, hashed_password: 'new' } });
    t.equal(relog.status, 200, 'new password works');
    const keys = await call('GET', '/biome/keys', { auth: (relog.body as { token: string }).token });
    t.same(keys.body, [{ ...key, user_id: g.userId }], 'key added');

    const keep = await call('PUT', `/biome/users/${g.userId}`, { version: v, auth: boss.token, body: { username: name, hashed_password: 'new' } });
    t.equal(keep.status, 200, 'update without new_password keeps the password');
    t.equal((await call('POST', '/biome/login', { body: { username: name, hashed_password: 'new' } })).status, 200);
    const badPw = await call('PUT', `/biome/users/${g.userId}`, { version: v, auth: boss.token, body: { username: name, hashed_password: 'x' } });
    t.equal(badPw.status, 401, 'update needs the current password');
    const otherName = await call('PUT', `/biome/users/${g.userId}`, {
      version: v,
      auth: boss.token,
      body: { username: 'boss', hashed_password: 'pw-of-boss' },
    });
    t.equal(otherName.status, 401, "another user's credentials do not unlock this user");

    t.equal((await call('GET', '/biome/users', { version: v, auth: nobody.token })).status, 403, 'read needs identity.user.read');
    t.equal((await call('DELETE', `/biome/users/${g.userId}`, { version: v, auth: nobody.token })).status, 403, 'delete needs identity.user.write');
    t.equal((await call('GET', '/biome/users', { version: v })).status, 401);
    const del = await call('DELETE', `/biome/users/${g.userId}`, { version: v, auth: boss.token });
    t.same([del.status, del.body], [200, { message: 'User deleted successfully' }], `v${v} delete`);
    t.equal((await call('GET', `/biome/users/${g.userId}`, { version: v, auth: boss.token })).status, 404);
    t.equal((await call('DELETE', `/biome/users/${g.userId}`, { version: v, auth: boss.token })).status, 404);
    t.equal((await call('POST', '/biome/login', { body: { username: name, hashed_password: 'new' } })).status, 401, 'deleted user cannot log in');
  }
});

t.test('bad input gets 400/413 with a message', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['malformed JSON', '{"username": "x",', /Malformed JSON/],
    ['not an object', '[1,2]', /JSON object/],
    ['empty body', '', /required/],
    ['wrong type', JSON.stringify({ username: 12, hashed_password: 'x' }), /"username" must be a string/],
    ['missing field', JSON.stringify({ username: 'x' }), /Missing field "hashed_password"/],
    ['empty username', JSON.stringify({ username: '', hashed_password: 'x' }), /must not be empty/],
    ['control characters', JSON.stringify({ username: 'a\u0000b', hashed_password: 'x' }), /control characters/],
  ];
  for (const path of ['/biome/register', '/biome/login']) {
    for (const [what, raw, msg] of cases) {
      const r = await call('POST', path, { raw });
      t.equal(r.status, 400, `${path} ${what}`);
      t.match((r.body as { message: string }).message, msg, `${path} ${what} message`);
    }
  }
  const big = await call('POST', '/biome/register', { raw: JSON.stringify({ username: 'x', hashed_password: 'y'.repeat(100_000) }) });
  t.equal(big.status, 413, 'oversized body');
  t.type((big.body as { message: string }).message, 'string');
  const long = await call('POST', '/biome/register', { raw: JSON.stringify({ username: 'x', hashed_password: 'y'.repeat(2000) }) });
  t.equal(long.status, 400, 'over-long password field');
  const typeKeys = await call('PUT', '/biome/users/x', { auth: admin, body: { username: 'a', hashed_password: 'b', new_key_pairs: 'no' } });
  t.equal(typeKeys.status, 400, 'new_key_pairs must be an array');
});

t.test('repeated failed logins for one username slow down', async (t) => {
  await registerAndLogin(call, 'henry', 'secret');
  const attempt = (username: string, pw: string): Promise<number> =>
    call('POST', '/biome/login', { body: { username, hashed_password: pw } }).then((r) => r.status);
  for (const target of ['henry', 'ghost-user']) {
    const seen: number[] = [];
    // docs/node-api.md: the third failed password in a row locks the username.
    for (let i = 0; i < 3; i++) seen.push(await attempt(target, 'bad'));
    t.same(seen, [401, 401, 401], `${target}: first three failures answer 401`);
    const locked = await call('POST', '/biome/login', { body: { username: target, hashed_password: 'secret' } });
    t.equal(locked.status, 429, `${target}: locked right after, even with the right password`);
    t.ok(Number(locked.headers.get('retry-after')) >= 1, 'Retry-After given');
    t.equal(await attempt('someone-else', 'bad'), 401, 'other usernames are not affected');
    await new Promise((r) => setTimeout(r, 350));
    t.equal(await attempt(target, 'bad'), 401, 'after the delay an attempt is checked again');
    t.equal(await attempt(target, 'bad'), 429, 'and the next lock is longer (doubled)');
    await new Promise((r) => setTimeout(r, 350));
    t.equal(await attempt(target, 'bad'), 429, 'still locked after one base delay');
    await new Promise((r) => setTimeout(r, 400));
    if (target === 'henry') t.equal(await attempt(target, 'secret'), 200, 'right password works once the lock ends');
  }
  const after: number[] = [];
  for (let i = 0; i < 3; i++) after.push(await attempt('henry', 'bad'));
  t.same(after, [401, 401, 401], 'a success reset the counter');
  t.equal(await attempt('henry', 'bad'), 429, 'and the third failure locks again');
});

t.test('parallel guesses for one username are bounded', async (t) => {
  await registerAndLogin(call, 'ivan', 'secret');
  const statuses = await Promise.all(
    Array.from({ length: 12 }, () => call('POST', '/biome/login', { body: { username: 'ivan', hashed_password: 'bad' } }).then((r) => r.status)),
  );
  const checked = statuses.filter((s) => s === 401).length;
  t.ok(checked >= 1 && checked <= 3, `at most 3 passwords checked (${checked})`);
  t.equal(statuses.filter((s) => s === 429).length, 12 - checked, 'the rest refused with 429');
});
