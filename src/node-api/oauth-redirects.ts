/**
 * Where OAuth logins may send the browser back to. The callback puts the new access
 * token into that URL, so an open redirect would hand tokens to any site: only
 * configured prefixes (CAIRN_OAUTH_ALLOWED_REDIRECTS: origins or origin+path prefixes)
 * are accepted; when none are configured, loopback hosts and the host of this node's
 * own callback URL are.
 */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

function parse(s: string): URL | null {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : null;
  } catch {
    return null;
  }
}

export class RedirectPolicy {
  readonly #allowed: URL[];
  readonly #ownHost: string | null;

  constructor(allowed: string[], ownCallback: string | undefined) {
    this.#allowed = allowed.map((a) => {
      const u = parse(a);
      if (!u) throw new Error(`OAuth allowed redirect "${a}" is not an http(s) URL`);
      return u;
    });
    this.#ownHost = ownCallback ? (parse(ownCallback)?.hostname ?? null) : null;
  }

  /** The parsed URL when allowed, else null. */
  check(target: string): URL | null {
    if (target.length > 2048) return null;
    const u = parse(target);
    if (!u || u.username || u.password) return null;
    if (this.#allowed.length > 0) {
      const ok = this.#allowed.some((a) => a.origin === u.origin && u.pathname.startsWith(a.pathname));
      return ok ? u : null;
    }
    return LOOPBACK.has(u.hostname) || u.hostname === this.#ownHost ? u : null;
  }
}
