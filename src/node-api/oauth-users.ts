/**
 * OAuth users: the node API's record of which local user a provider subject is. Route
 * handlers go through these functions, never through the stores' transactions.
 */
import { randomUUID } from 'node:crypto';
import { profileFromClaims } from './profiles.js';
import type { Stores } from './stores.js';

/**
 * The user of a provider login: created on the first login of `subject`, its profile
 * refreshed from the claims every time, in one transaction. Resolves with the user id.
 */
export function linkOAuthLogin(stores: Stores, subject: string, claims: Record<string, unknown>): Promise<string> {
  return stores.root.transaction(() => {
    const known = stores.oauthUsers.get(subject);
    const id = known?.user_id ?? randomUUID();
    if (!known) void stores.oauthUsers.put(subject, { subject, user_id: id });
    void stores.profiles.put(id, profileFromClaims(id, subject, claims));
    return id;
  });
}

/** Every OAuth user, by subject. */
export function listOAuthUsers(stores: Stores): Array<{ subject: string; user_id: string }> {
  return Array.from(stores.oauthUsers.getRange({}).map(({ value }) => ({ subject: value.subject, user_id: value.user_id })));
}
