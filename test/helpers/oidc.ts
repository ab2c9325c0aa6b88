/**
 * A real OpenID Connect provider (oidc-provider) on 127.0.0.1 for the OAuth tests, and a
 * browser-like walk through its login with real HTTP redirects and cookies.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

export const PEOPLE: Record<string, { name: string; given_name: string; family_name: string; email: string }> = {
  alice: { name: 'Alice Example', given_name: 'Alice', family_name: 'Example', email: 'alice@example.com' },
  shorty: { name: 'Short Lived', given_name: 'Short', family_name: 'Lived', email: 'shorty@example.com' },
};

/** Starts a provider whose one client may redirect to `redirectUris`. Account `shorty` gets 3 s access tokens. */
export async function startProvider(redirectUris: string[]): Promise<TestProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  const server: Server = createServer((req, res) => handler?.(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'cairn-node',
        client_secret: 'cairn-node-secret',
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    findAccount: (_ctx, id) => {
      const p = PEOPLE[id];
      return p ? { accountId: id, claims: () => ({ sub: id, ...p }) } : undefined;
    },
    claims: { openid: ['sub'], profile: ['name', 'given_name', 'family_name', 'picture'], email: ['email'] },
    cookies: { keys: ['test-only-cookie-key'] },
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    clockTolerance: 0,
    ttl: { AccessToken: (_ctx, token) => (token.accountId === 'shorty' ? 3 : 3600) },
  });
  handler = provider.callback();
  return {
    issuer,
    clientId: 'cairn-node',
    clientSecret: 'cairn-node-secret',
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** A cookie jar that ignores paths (everything here is one host per jar entry). */
export class Browser {
  readonly #jar = new Map<string, Map<string, string>>();
  readonly visited: string[] = [];

  async request(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const u = new URL(url);
    const cookies = this.#jar.get(u.host) ?? new Map<string, string>();
    const headers: Record<string, string> = {};
    if (cookies.size) headers.cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      body = new URLSearchParams(init.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    this.visited.push(`${init.method ?? 'GET'} ${url}`);
    const res = await fetch(url, { method: init.method ?? 'GET', headers, body, redirect: 'manual' });
    for (const sc of res.headers.getSetCookie()) {
      const [pair, ...attrs] = sc.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0/i.test(a) || /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (expired || value === '') cookies.delete(name);
      else cookies.set(name, value);
    }
    this.#jar.set(u.host, cookies);
    return res;
  }

  /**
   * Follows redirects from `start`, logging in as `account` and granting consent on the
   * provider's pages, until a redirect leaves for a URL that starts with `stopAt`.
   * Returns that URL.
   */
  async walk(start: string, account: string, stopAt: string): Promise<string> {
    let url = start;
    for (let hop = 0; hop < 20; hop++) {
      if (url.startsWith(stopAt)) return url;
      let res = await this.request(url);
      if (res.status === 200 && /\/interaction\//.test(url)) {
        const html = await res.text();
        const form: Record<string, string> = /name="prompt" value="login"/.test(html)
          ? { prompt: 'login', login: account, password: 'any' }
          : { prompt: 'consent' };
        res = await this.request(url, { method: 'POST', form });
      }
      const loc = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !loc) throw new Error(`walk stopped at ${url}: ${res.status} ${await res.text()}`);
      url = new URL(loc, url).href;
    }
    throw new Error('too many redirects');
  }
}
