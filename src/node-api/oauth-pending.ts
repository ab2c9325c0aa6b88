/** Logins begun but not yet called back: state → PKCE verifier and redirects. Bounded, 10-minute TTL. */
const TTL_MS = 10 * 60_000;
const MAX = 10_000;

export interface PendingLogin {
  verifier: string;
  redirectUri: string;
  clientRedirect: string;
}

export class PendingLogins {
  readonly #m = new Map<string, PendingLogin & { expires: number }>();

  add(state: string, p: PendingLogin): void {
    const now = Date.now();
    for (const [k, v] of this.#m) {
      if (v.expires > now && this.#m.size < MAX) break;
      this.#m.delete(k);
    }
    this.#m.set(state, { ...p, expires: now + TTL_MS });
  }

  /** One use only. */
  take(state: string): PendingLogin | undefined {
    const p = this.#m.get(state);
    this.#m.delete(state);
    return p && p.expires > Date.now() ? p : undefined;
  }
}
