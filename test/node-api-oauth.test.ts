import t from 'tap';
import { log } from '../src/log.js';
import { captureStderr, startApiNode, VERSIONS, type ApiNode } from './helpers/node-api.js';
import { Browser, PEOPLE, startProvider, type TestProvider } from './helpers/oidc.js';
import { freePort } from './helpers/ports.js';

const logs = captureStderr();
log.setLevel('debug');
const nodePort = await freePort();
const callback = `http://127.0.0.1:${nodePort}/oauth/callback`;
const provider: TestProvider = await startProvider([callback]);
const n: ApiNode = await startApiNode({
  CAIRN_NODE_BIND: `127.0.0.1:${nodePort}`,
  CAIRN_OAUTH_ISSUER: provider.issuer,
  CAIRN_OAUTH_CLIENT_ID: provider.clientId,
  CAIRN_OAUTH_CLIENT_SECRET: provider.clientSecret,
  CAIRN_OAUTH_RECHECK: '1',
});
t.teardown(async () => {
  logs.restore();
  await n.stop();
  await provider.close();
});
const { call, admin } = n;
const APP = 'http://127.0.0.1:5999/app/logged-in';

interface Login {
  token: string;
  displayName: string;
  visited: string[];
}

async function oauthLogin(account: string, version?: number): Promise<Login> {
  const browser = new Browser();
  const begin = await call('GET', `/oauth/login?redirect_url=${encodeURIComponent(APP)}`, version ? { version } : {});
  if (begin.status !== 302) throw new Error(`begin: ${begin.status} ${begin.text}`);
  const toCallback = await browser.walk(begin.headers.get('location')!, account, callback);
  const cb = await browser.request(toCallback);
  if (cb.status !== 302) throw new Error(`callback: ${cb.status} ${await cb.text()}`);
  const back = new URL(cb.headers.get('location')!);
  if (!back.href.startsWith(APP)) throw new Error(`unexpected redirect ${back.href}`);
  return { token: back.searchParams.get('access_token')!, displayName: back.searchParams.get('display_name')!, visited: browser.visited };
}

t.test('begin login redirects to the provider with state and PKCE', async (t) => {
  const r = await call('GET', `/oauth/login?redirect_url=${encodeURIComponent(APP)}`);
  t.equal(r.status, 302);
  const loc = new URL(r.headers.get('location')!);
  t.equal(loc.origin, provider.issuer, 'to the configured provider');
  t.equal(loc.searchParams.get('response_type'), 'code');
  t.equal(loc.searchParams.get('client_id'), provider.clientId);
  t.equal(loc.searchParams.get('redirect_uri'), callback);
  t.equal(loc.searchParams.get('code_challenge_method'), 'S256');
  t.match(loc.searchParams.get('code_challenge'), /^[\w-]{43}$/);
  t.match(loc.searchParams.get('state'), /^[\w-]{20,}$/);
  t.match(loc.searchParams.get('scope'), /\bopenid\b/);
  const again = await call('GET', `/oauth/login?redirect_url=${encodeURIComponent(APP)}`);
  t.not(new URL(again.headers.get('location')!).searchParams.get('state'), loc.searchParams.get('state'), 'fresh state each time');
  const referer = await call('GET', '/oauth/login', { headers: { referer: APP } });
  t.equal(referer.status, 302, 'Referer is used when redirect_url is absent');
});

t.test('full login round trip through the real provider', async (t) => {
  const login = await oauthLogin('alice');
  t.match(login.token, /^OAuth2:[\w-]{43}$/);
  t.equal(login.displayName, PEOPLE.alice!.name);
  t.ok(
    login.visited.some((v) => v.startsWith('POST') && v.includes('/interaction/')),
    'went through the provider login form',
  );
  t.ok(
    login.visited.some((v) => v.startsWith(`GET ${callback}?code=`)),
    'provider redirected to the node callback with a code',
  );

  for (const v of VERSIONS.filter((x) => x === 2)) {
    const prof = await call('GET', '/biome/profile', { version: v, auth: login.token });
    t.equal(prof.status, 200, 'own profile');
    const p = prof.body as Record<string, unknown>;
    t.match(p, { subject: 'alice', name: 'Alice Example', given_name: 'Alice', family_name: 'Example', email: 'alice@example.com', picture: null });
    t.match(p.user_id, /^[0-9a-f-]{36}$/);

    const users = await call('GET', '/oauth/users', { version: v, auth: admin });
    t.equal(users.status, 200);
    const ub = users.body as { data: Array<{ subject: string; user_id: string }>; paging: Record<string, unknown> };
    t.same(ub.data, [{ subject: 'alice', user_id: p.user_id }]);
    t.match(ub.paging, { offset: 0, limit: 100, total: 1, current: '/oauth/users?limit=100&offset=0' });

    const profiles = await call('GET', '/biome/profiles', { version: v, auth: admin });
    t.ok(
      (profiles.body as Array<{ user_id: string }>).some((x) => x.user_id === p.user_id),
      'listed in profiles',
    );
    const one = await call('GET', `/biome/profiles/${String(p.user_id)}`, { version: v, auth: admin });
    t.same(one.body, p, 'fetch profile');
    t.equal((await call('GET', '/biome/profiles/nope', { version: v, auth: admin })).status, 404);
  }

  const keys = await call('POST', '/biome/keys', {
    auth: login.token,
    body: { public_key: `02${'ee'.repeat(32)}`, display_name: 'oauth key', encrypted_private_key: 'x' },
  });
  t.equal(keys.status, 200, 'an OAuth user manages their own keys');

  const second = await oauthLogin('alice');
  const p2 = (await call('GET', '/biome/profile', { auth: second.token })).body as { user_id: string };
  const p1 = (await call('GET', '/biome/profile', { auth: login.token })).body as { user_id: string };
  t.equal(p2.user_id, p1.user_id, 'the user is created on the first login only');
  t.equal(((await call('GET', '/oauth/users', { auth: admin })).body as { data: unknown[] }).data.length, 1);

  t.equal((await call('GET', '/oauth/logout', { version: 1, auth: login.token })).status, 400, 'OAuth log out is protocol 2');
  const out = await call('GET', '/oauth/logout', { auth: login.token });
  t.same([out.status, out.body], [200, { message: 'User successfully logged out' }]);
  t.equal((await call('GET', '/biome/profile', { auth: login.token })).status, 401, 'token removed');
  t.equal((await call('GET', '/biome/profile', { auth: second.token })).status, 401, "all of the user's OAuth tokens removed");
  t.equal((await call('GET', '/oauth/logout', { auth: admin })).status, 403, 'OAuth log out needs an OAuth2 token');
  t.equal((await call('GET', '/oauth/logout')).status, 401);
});

t.test('sessions are re-checked with the provider', async (t) => {
  const s = await oauthLogin('shorty');
  t.equal((await call('GET', '/biome/profile', { auth: s.token })).status, 200);
  await new Promise((r) => setTimeout(r, 1200));
  t.equal((await call('GET', '/biome/profile', { auth: s.token })).status, 200, 'provider still accepts the session');
  await new Promise((r) => setTimeout(r, 2600));
  t.equal((await call('GET', '/biome/profile', { auth: s.token })).status, 401, 'provider token expired → session ended');
});

t.test('callback errors and bad redirects', async (t) => {
  const evil = await call('GET', `/oauth/login?redirect_url=${encodeURIComponent('https://evil.example/steal')}`);
  t.equal(evil.status, 400, 'redirect to a foreign site refused');
  t.match((evil.body as { message: string }).message, /not an allowed client address/);
  t.equal((await call('GET', '/oauth/login?redirect_url=javascript:alert(1)')).status, 400);
  const none = await call('GET', '/oauth/login');
  t.same([none.status, none.body], [400, { message: 'No valid redirect URL supplied' }]);
  t.equal((await call('GET', '/oauth/callback?code=abc&state=unknown')).status, 400, 'unknown state');
  t.equal((await call('GET', '/oauth/callback')).status, 400, 'no query');

  const begin = await call('GET', `/oauth/login?redirect_url=${encodeURIComponent(APP)}`);
  const state = new URL(begin.headers.get('location')!).searchParams.get('state')!;
  const denied = await call('GET', `/oauth/callback?error=access_denied&state=${state}`);
  t.equal(denied.status, 400, 'provider error');
  t.match((denied.body as { message: string }).message, /access_denied/);

  const b2 = await call('GET', `/oauth/login?redirect_url=${encodeURIComponent(APP)}`);
  const state2 = new URL(b2.headers.get('location')!).searchParams.get('state')!;
  const forged = await call('GET', `/oauth/callback?code=forged-code&state=${state2}&iss=${encodeURIComponent(provider.issuer)}`);
  t.equal(forged.status, 400, 'a code the provider never issued');
  const replay = await call('GET', `/oauth/callback?code=forged-code&state=${state2}`);
  t.equal(replay.status, 400, 'state is single-use');

  const browser = new Browser();
  const b3 = await call('GET', `/oauth/login?redirect_url=${encodeURIComponent(APP)}`);
  const toCallback = await browser.walk(b3.headers.get('location')!, 'alice', callback);
  t.equal((await browser.request(toCallback)).status, 302, 'real code accepted once');
  t.equal((await browser.request(toCallback)).status, 400, 'the same callback URL cannot be replayed');
});

t.test('protocol versions and permissions of OAuth and profile routes', async (t) => {
  for (const path of [`/oauth/login?redirect_url=${encodeURIComponent(APP)}`, '/oauth/callback?state=x&code=y']) {
    t.equal((await call('GET', path, { version: 1 })).status, 400, `${path} is protocol 2 only`);
  }
  const s = await oauthLogin('alice', 2);
  t.equal((await call('GET', '/biome/profile', { version: 1, auth: s.token })).status, 400, 'profiles are protocol 2');
  t.equal((await call('GET', '/biome/profiles', { version: 1, auth: admin })).status, 400);
  t.equal((await call('GET', '/biome/profiles/x', { version: 1, auth: admin })).status, 400);
  t.equal((await call('GET', '/biome/profiles', { auth: s.token })).status, 403, 'needs identity.profile.read');
  t.equal((await call('GET', '/biome/profiles/x', { auth: s.token })).status, 403);
  t.equal((await call('GET', '/oauth/users', { auth: s.token })).status, 403, 'needs oauth.user.read');
  t.equal((await call('GET', '/oauth/users', { version: 1, auth: admin })).status, 400);
  t.equal((await call('GET', '/oauth/users?limit=500', { auth: admin })).status, 400, 'limit max 100');
  t.equal((await call('GET', '/biome/profile', { auth: admin })).status, 403, 'a key has no profile');
  t.equal((await call('GET', '/biome/profile')).status, 401);
});

t.test('a credential user has a profile too', async (t) => {
  await call('POST', '/biome/register', { body: { username: 'plain@example.com', hashed_password: 'p' } });
  const login = await call('POST', '/biome/login', { body: { username: 'plain@example.com', hashed_password: 'p' } });
  const b = login.body as { token: string; user_id: string };
  const p = await call('GET', '/biome/profile', { auth: b.token });
  t.same(p.body, { user_id: b.user_id, subject: 'plain@example.com', name: null, given_name: null, family_name: null, email: null, picture: null });
});

t.test('OAuth secrets never reach the log', async (t) => {
  const s = await oauthLogin('alice');
  await call('GET', '/biome/profile', { auth: s.token });
  await call('GET', '/oauth/logout', { auth: s.token });
  const text = logs.text();
  t.match(text, /OAuth login of user/, 'the OAuth flow logged');
  t.notOk(text.includes(s.token.slice('OAuth2:'.length)), 'no session token');
  t.notOk(text.includes(provider.clientSecret), 'no client secret');
  t.notOk(/code=[\w-]{20,}/.test(text), 'no authorization code');
});
