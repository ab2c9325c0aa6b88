/**
 * The OpenID Connect relying party (openid-client): discovery (lazy, retried until it
 * works), authorization URL with state and PKCE S256, code exchange, and the periodic
 * re-check of a session against the provider (userinfo, then refresh token).
 * Plain-http issuers are allowed only on loopback hosts (tests, local development).
 */
import * as oidc from 'openid-client';
import { log } from '../log.js';

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  scope: string;
}

export interface ProviderLogin {
  subject: string;
  claims: Record<string, unknown>;
  accessToken: string;
  refreshToken: string | null;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

export class OidcClient {
  readonly #s: OidcSettings;
  #config: Promise<oidc.Configuration> | null = null;

  constructor(settings: OidcSettings) {
    this.#s = settings;
  }

  #configuration(): Promise<oidc.Configuration> {
    if (!this.#config) {
      const issuer = new URL(this.#s.issuer);
      const insecure = issuer.protocol === 'http:' && LOOPBACK.has(issuer.hostname);
      const auth = this.#s.clientSecret ? oidc.ClientSecretBasic(this.#s.clientSecret) : oidc.None();
      this.#config = oidc
        .discovery(issuer, this.#s.clientId, undefined, auth, insecure ? { execute: [oidc.allowInsecureRequests] } : {})
        .catch((err: unknown) => {
          this.#config = null;
          log.warn(`OpenID discovery of ${this.#s.issuer} failed`, err);
          throw err;
        });
    }
    return this.#config;
  }

  async authorizationUrl(redirectUri: string, state: string, codeVerifier: string): Promise<URL> {
    const config = await this.#configuration();
    return oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.#s.scope,
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
  }

  /** `callbackUrl` = the registered redirect URI with the provider's query string. */
  async exchange(callbackUrl: URL, state: string, codeVerifier: string): Promise<ProviderLogin> {
    const config = await this.#configuration();
    const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: codeVerifier,
      expectedState: state,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims();
    if (!idClaims) throw new Error('the provider returned no ID token');
    let info: Record<string, unknown> = {};
    try {
      info = await oidc.fetchUserInfo(config, tokens.access_token, idClaims.sub);
    } catch (err) {
      log.warn('OpenID userinfo request failed; using ID token claims only', err);
    }
    return {
      subject: idClaims.sub,
      claims: { ...idClaims, ...info },
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token ?? null,
    };
  }

  /** Checks a stored session; returns fresh provider tokens, or null when it is no longer valid. */
  async recheck(
    subject: string,
    accessToken: string,
    refreshToken: string | null,
  ): Promise<{ accessToken: string; refreshToken: string | null } | null> {
    const config = await this.#configuration();
    try {
      await oidc.fetchUserInfo(config, accessToken, subject);
      return { accessToken, refreshToken };
    } catch {
      if (!refreshToken) return null;
    }
    try {
      const t = await oidc.refreshTokenGrant(config, refreshToken);
      return { accessToken: t.access_token, refreshToken: t.refresh_token ?? refreshToken };
    } catch {
      return null;
    }
  }
}
