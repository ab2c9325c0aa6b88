import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, generateKeyPair } from 'jose';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { makeCylinderJwt } from '../src/auth/cylinder.js';
import { startApiNode, registerAndLogin, grant, type ApiNode } from './helpers/node-api.js';

const n: ApiNode = await startApiNode();
t.teardown(() => n.stop());
const { call, admin } = n;
const secret = (name: string): Uint8Array => Buffer.from(readFileSync(join(n.t.dataDir, 'keys', name), 'utf8').trim(), 'hex');
const b64url = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
const CURVE_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

const user = await registerAndLogin(call, 'tess');
const claims = (over: Record<string, unknown> = {}): Record<string, unknown> => ({ user_id: user.userId, gen: 0, use: 'access', ...over });
const keysWith = (tok: string): Promise<number> => call('GET', '/biome/keys', { auth: tok }).then((r) => r.status);

t.test('a valid access token works (control)', async (t) => {
  t.equal(await keysWith(user.token), 200);
  const own = await new SignJWT(claims())
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('self-issued')
    .setExpirationTime('1h')
    .sign(secret('access_token.secret'));
  t.equal(await keysWith(`Biome:${own}`), 200, 'a token made with the persisted secret is accepted');
});

t.test('missing or malformed credentials are 401', async (t) => {
  for (const h of [
    undefined,
    '',
    'Bearer',
    'Basic dXNlcjpwdw==',
    'Bearer nocolon',
    'Bearer Unknown:abc',
    'Bearer Biome:',
    'Bearer Biome:not.a.jwt',
    `Bearer biome:${user.token.slice(6)}`,
    'Bearer Cylinder:abc',
    'Bearer OAuth2:nope',
  ]) {
    const r = await call('GET', '/biome/keys', h === undefined ? {} : { headers: { authorization: h } });
    t.equal(r.status, 401, `header ${JSON.stringify(h)}`);
    t.type((r.body as { message: string }).message, 'string');
  }
});

t.test('expired access and refresh tokens are rejected', async (t) => {
  const past = Math.floor(Date.now() / 1000) - 60;
  const access = await new SignJWT(claims())
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('self-issued')
    .setIssuedAt(past - 60)
    .setExpirationTime(past)
    .sign(secret('access_token.secret'));
  t.equal(await keysWith(`Biome:${access}`), 401, 'expired access token');
  const refresh = await new SignJWT(claims({ use: 'refresh' }))
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('self-issued')
    .setExpirationTime(past)
    .sign(secret('refresh_token.secret'));
  t.equal((await call('POST', '/biome/token', { body: { refresh_token: refresh } })).status, 401, 'expired refresh token');
  const noExp = await new SignJWT(claims())
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('self-issued')
    .sign(secret('access_token.secret'));
  t.equal(await keysWith(`Biome:${noExp}`), 401, 'a token without exp is refused');
});

t.test('short-lived tokens really expire (real clock)', async (t) => {
  const short = await startApiNode({ CAIRN_ACCESS_TOKEN_TTL: '3' });
  t.teardown(() => short.stop());
  const u = await registerAndLogin(short.call, 'quick');
  t.equal((await short.call('GET', '/biome/keys', { auth: u.token })).status, 200, 'fresh');
  await new Promise((r) => setTimeout(r, 3100));
  t.equal((await short.call('GET', '/biome/keys', { auth: u.token })).status, 401, 'expired after its TTL');
  const renewed = await short.call('POST', '/biome/token', { body: { refresh_token: u.refresh } });
  t.equal(renewed.status, 200, 'the refresh token still gets a new one');
});

t.test('tampered tokens are rejected', async (t) => {
  const [h, p, s] = user.token.slice(6).split('.') as [string, string, string];
  const payload = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
  const forged = b64url({ ...payload, user_id: 'someone-else' });
  t.equal(await keysWith(`Biome:${h}.${forged}.${s}`), 401, 'changed claims');
  const flipped = s.slice(0, -2) + (s.at(-2) === 'A' ? 'B' : 'A') + s.at(-1);
  t.equal(await keysWith(`Biome:${h}.${p}.${flipped}`), 401, 'changed signature');
  const wrongSecret = await new SignJWT(claims())
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('self-issued')
    .setExpirationTime('1h')
    .sign(new Uint8Array(32));
  t.equal(await keysWith(`Biome:${wrongSecret}`), 401, 'signed with another secret');
  const wrongIssuer = await new SignJWT(claims())
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('evil')
    .setExpirationTime('1h')
    .sign(secret('access_token.secret'));
  t.equal(await keysWith(`Biome:${wrongIssuer}`), 401, 'wrong issuer');
  const staleGen = await new SignJWT(claims({ gen: 7 }))
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('self-issued')
    .setExpirationTime('1h')
    .sign(secret('access_token.secret'));
  t.equal(await keysWith(`Biome:${staleGen}`), 401, 'token generation does not match');
});

t.test('wrong algorithms are rejected', async (t) => {
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const body = b64url({ ...claims(), iss: 'self-issued', exp });
  t.equal(await keysWith(`Biome:${b64url({ alg: 'none', typ: 'JWT' })}.${body}.`), 401, 'alg none, empty signature');
  t.equal(await keysWith(`Biome:${b64url({ alg: 'none' })}.${body}`), 401, 'alg none, two segments');
  const hs512 = await new SignJWT(claims())
    .setProtectedHeader({ alg: 'HS512', typ: 'JWT' })
    .setIssuer('self-issued')
    .setExpirationTime('1h')
    .sign(secret('access_token.secret'));
  t.equal(await keysWith(`Biome:${hs512}`), 401, 'HS512 with the right secret');
  const { privateKey } = await generateKeyPair('RS256');
  const rs = await new SignJWT(claims())
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuer('self-issued')
    .setExpirationTime('1h')
    .sign(privateKey);
  t.equal(await keysWith(`Biome:${rs}`), 401, 'RS256 token');
  const { createHmac } = await import('node:crypto');
  const head = b64url({ alg: 'RS256', typ: 'JWT' });
  const mac = createHmac('sha256', secret('access_token.secret')).update(`${head}.${body}`).digest('base64url');
  t.equal(await keysWith(`Biome:${head}.${body}.${mac}`), 401, 'header says RS256, HMAC-signed (alg confusion)');
  const es = await generateKeyPair('ES256');
  const esTok = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES256' }).setIssuer('self-issued').setExpirationTime('1h').sign(es.privateKey);
  t.equal(await keysWith(`Biome:${esTok}`), 401, 'ES256 token');
});

t.test('revoked tokens (after log out) are rejected', async (t) => {
  const u = await registerAndLogin(call, 'revoked');
  t.equal((await call('PATCH', '/biome/logout', { auth: u.token })).status, 200);
  t.equal(await keysWith(u.token), 401, 'access token revoked');
  t.equal((await call('POST', '/biome/token', { body: { refresh_token: u.refresh } })).status, 401, 'refresh token revoked');
});

t.test('Cylinder tokens: valid, high-S, wrong key, tampered, wrong header', async (t) => {
  t.equal((await call('GET', '/status', { auth: admin })).status, 200, 'admin key token works');
  const jwt = admin.slice('Cylinder:'.length);
  const [h, c, s] = jwt.split('.') as [string, string, string];
  const sig = Buffer.from(s, 'base64');
  const r = sig.subarray(0, 32);
  const sv = BigInt(`0x${sig.subarray(32).toString('hex')}`);
  const highS = Buffer.concat([r, Buffer.from((CURVE_N - sv).toString(16).padStart(64, '0'), 'hex')]);
  t.equal((await call('GET', '/status', { auth: `Cylinder:${h}.${c}.${highS.toString('base64')}` })).status, 401, 'high-S form of a valid signature');

  const other = new Signer(randomPrivateKey());
  const claimsForAdmin = Buffer.from(JSON.stringify({ iss: n.t.node.adminSigner.publicKey })).toString('base64');
  const sigByOther = Buffer.from(other.sign(Buffer.from(`${h}.${claimsForAdmin}`)), 'hex').toString('base64');
  t.equal((await call('GET', '/status', { auth: `Cylinder:${h}.${claimsForAdmin}.${sigByOther}` })).status, 401, 'signed by a key other than iss');

  const tampered = Buffer.from(JSON.stringify({ iss: n.t.node.adminSigner.publicKey, extra: 'x' })).toString('base64');
  t.equal((await call('GET', '/status', { auth: `Cylinder:${h}.${tampered}.${s}` })).status, 401, 'claims changed after signing');
  const badHeader = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'cylinder+jwt' })).toString('base64');
  t.equal((await call('GET', '/status', { auth: `Cylinder:${badHeader}.${c}.${s}` })).status, 401, 'wrong alg in header');
  t.equal(
    (await call('GET', '/status', { auth: `Cylinder:${h}.${c}.${Buffer.from(sig).toString('base64url')}` })).status,
    401,
    'base64url is not the Cylinder encoding',
  );
  const expired = makeCylinderJwt(n.t.node.adminSigner, { exp: Math.floor(Date.now() / 1000) - 10 });
  t.equal((await call('GET', '/status', { auth: `Cylinder:${expired}` })).status, 401, 'exp in the past');
  t.equal((await call('GET', '/status', { auth: `Cylinder:${makeCylinderJwt(other)}` })).status, 403, 'valid signature, key without permission');
});

t.test('permissions: 403 without, 200 once granted', async (t) => {
  const k = new Signer(randomPrivateKey());
  const tok = `Cylinder:${makeCylinderJwt(k)}`;
  const before = await call('GET', '/registry/nodes', { auth: tok });
  t.equal(before.status, 403);
  t.match((before.body as { message: string }).message, /registry\.read/);
  await grant(call, admin, 'key', k.publicKey, ['registry.read']);
  t.equal((await call('GET', '/registry/nodes', { auth: tok })).status, 200);
  t.equal((await call('POST', '/registry/nodes', { auth: tok, body: {} })).status, 403, 'write still refused');
});

t.test('NodeProtocolVersion header', async (t) => {
  const get = (headers: Record<string, string>, auth = admin): Promise<number> => call('GET', '/status', { auth, headers }).then((r) => r.status);
  t.equal(await get({}), 200, 'absent → latest');
  t.equal(await get({ nodeprotocolversion: '1' }), 200);
  t.equal(await get({ nodeprotocolversion: '2' }), 200);
  t.equal(await get({ splinterprotocolversion: '1' }), 200, 'SplinterProtocolVersion alias');
  for (const v of ['0', '3', '10', 'abc', '1.5', '-1', '']) {
    const r = await call('GET', '/status', { auth: admin, headers: { nodeprotocolversion: v } });
    t.equal(r.status, 400, `NodeProtocolVersion ${JSON.stringify(v)}`);
    t.match((r.body as { message: string }).message, /protocol|NodeProtocolVersion/i);
  }
  t.equal(await get({ splinterprotocolversion: '9' }), 400, 'alias with a bad value');
  t.equal(await get({ nodeprotocolversion: '1', splinterprotocolversion: '2' }), 400, 'both headers, disagreeing');
  t.equal((await call('GET', '/status', { version: 1 })).status, 401, 'version 1 never skips authentication');
  t.equal((await call('GET', '/status', { version: 7 })).status, 401, 'auth is checked before the version');
  t.equal(
    (await call('POST', '/biome/login', { version: 3, body: { username: 'tess', hashed_password: 'x' } })).status,
    400,
    'public routes check it too',
  );
});

t.test('no secret material in responses', async (t) => {
  const priv = readFileSync(join(n.t.dataDir, 'keys', 'admin.priv'), 'utf8').trim();
  const s1 = Buffer.from(secret('access_token.secret')).toString('hex');
  for (const path of ['/status', '/biome/users', '/biome/profiles', '/authorization/assignments', '/registry/nodes']) {
    const r = await call('GET', path, { auth: admin });
    t.equal(r.status, 200, path);
    for (const needle of [priv, s1, '$2b$', 'password_hash']) t.notOk(r.text.includes(needle), `${path} does not contain ${needle.slice(0, 6)}…`);
  }
});
