/**
 * OAuth login (`/oauth/login`, `/oauth/callback`, `/oauth/logout`, `/oauth/users`;
 * protocol 2). Begin: state + PKCE kept server-side for 10 minutes, 302 to the provider.
 * Callback: code exchange, OAuth user created on first login, profile refreshed from
 * the claims, session token issued, 302 to the client's redirect URL with
 * `access_token=OAuth2:<token>&display_name=<name>`.
 */
import * as oidc from 'openid-client';
import type { Reply, Req } from '../http/server.js';
import { log } from '../log.js';
import type { Config } from '../config.js';
import type { OidcClient } from './oauth-client.js';
import type { OAuthSessions } from './oauth-sessions.js';
import { RedirectPolicy } from './oauth-redirects.js';
import { PendingLogins } from './oauth-pending.js';
import { pageOf, parsePageQuery } from './paging.js';
import { linkOAuthLogin, listOAuthUsers } from './oauth-users.js';
import { json, requireUser, type Router } from './router.js';
import { ANY_JSON } from '../http/route.js';
import { nodeReplies } from './replies.js';
import type { Stores } from './stores.js';
import { nodeErrors } from './errors.js';

export interface OAuthDeps {
  config: Config;
  stores: Stores;
  client: OidcClient | null;
  sessions: OAuthSessions;
}

const redirect = (location: string): Reply => ({ status: 302, body: '', contentType: 'text/plain', headers: { location } });

function callbackUri(config: Config, req: Req): string {
  if (config.oauth.redirectUrl) return config.oauth.redirectUrl;
  const { host, port } = config.nodeBind;
  const wildcard = host === '0.0.0.0' || host === '::';
  if (port !== 0 && !wildcard) return `http://${host.includes(':') ? `[${host}]` : host}:${port}/oauth/callback`;
  return `http://${req.headers.host ?? '127.0.0.1'}/oauth/callback`;
}

export function registerOAuthRoutes(r: Router, d: OAuthDeps): void {
  const policy = new RedirectPolicy(d.config.oauth.allowedRedirects, d.config.oauth.redirectUrl);
  const pending = new PendingLogins();
  const client = (): OidcClient => {
    if (!d.client) throw nodeErrors.oauthNotConfigured();
    return d.client;
  };

  r.add({
    method: 'get',
    path: '/oauth/login',
    permission: 'public',
    minVersion: 2,
    reply: ANY_JSON,
    // No provider configured is a 404 whatever the query says.
    load: client,
    // Where the client wants to be sent back: `redirect_url`, else the Referer; an allowed address.
    query: (req) => {
      const target = req.query.get('redirect_url') ?? req.headers.referer;
      if (!target) throw nodeErrors.oauthNoRedirect();
      const clientRedirect = policy.check(target);
      if (!clientRedirect) throw nodeErrors.oauthRedirectNotAllowed();
      return clientRedirect;
    },
    handler: async ({ req, loaded: c, query: clientRedirect }) => {
      const state = oidc.randomState();
      const verifier = oidc.randomPKCECodeVerifier();
      const redirectUri = callbackUri(d.config, req);
      const url = await c.authorizationUrl(redirectUri, state, verifier).catch(() => {
        throw nodeErrors.oauthProviderUnreachable();
      });
      pending.add(state, { verifier, redirectUri, clientRedirect: clientRedirect.href });
      return redirect(url.href);
    },
  });

  r.add({
    method: 'get',
    path: '/oauth/callback',
    permission: 'public',
    minVersion: 2,
    reply: ANY_JSON,
    load: client,
    // The login this callback ends (taken from the pending ones: a state is used once), then
    // the provider's refusal, if it sent one.
    query: (req) => {
      const state = req.query.get('state');
      const p = state ? pending.take(state) : undefined;
      if (!state || !p) throw nodeErrors.oauthStateUnknown();
      const err = req.query.get('error');
      if (err) throw nodeErrors.oauthLoginRefused({ error: err.slice(0, 100) });
      return { state, p };
    },
    handler: async ({ req, loaded: c, query: { state, p } }) => {
      // The provider's answer goes on to the code exchange as it came (code, state, iss).
      const url = new URL(p.redirectUri);
      url.search = req.rawQuery;
      const login = await c.exchange(url, state, p.verifier).catch((e: unknown) => {
        log.warn('OAuth code exchange failed', e);
        throw nodeErrors.oauthCodeRefused();
      });
      const userId = await linkOAuthLogin(d.stores, login.subject, login.claims);
      const token = await d.sessions.create({
        user_id: userId,
        subject: login.subject,
        provider_access_token: login.accessToken,
        provider_refresh_token: login.refreshToken,
        last_authenticated: Date.now(),
      });
      log.info(`OAuth login of user ${userId}`);
      const back = new URL(p.clientRedirect);
      back.searchParams.set('access_token', `OAuth2:${token}`);
      const name = login.claims.name;
      back.searchParams.set('display_name', typeof name === 'string' ? name : login.subject);
      return redirect(back.href);
    },
  });

  r.add({
    method: 'get',
    path: '/oauth/logout',
    permission: 'authenticated',
    minVersion: 2,
    reply: nodeReplies.message,
    handler: async (c) => {
      requireUser(c);
      if (c.identity.kind !== 'user' || c.identity.via !== 'oauth') throw nodeErrors.oauthLogoutNeedsOauth();
      await d.sessions.removeAllOfUser(c.identity.userId);
      return json({ message: 'User successfully logged out' });
    },
  });

  r.add({
    method: 'get',
    path: '/oauth/users',
    permission: 'oauth.user.read',
    minVersion: 2,
    reply: nodeReplies.oauthUsers,
    query: (req) => parsePageQuery(req.query),
    handler: ({ req, query: page }) => {
      const all = listOAuthUsers(d.stores);
      return json(pageOf(all, `${req.path}?`, page));
    },
  });
}
