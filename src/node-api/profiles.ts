/**
 * Profiles (`/biome/profiles`, `/biome/profile`; protocol 2). A credential user's
 * profile is created with the account (subject = username, other fields null); an OAuth
 * user's profile is filled from the provider's claims at every login.
 */
import { json, requireUser, type Router } from './router.js';
import { nodeReplies } from './replies.js';
import type { ProfileRecord, Stores } from './stores.js';
import { nodeErrors } from './errors.js';

export function profileJson(p: ProfileRecord): ProfileRecord {
  return {
    user_id: p.user_id,
    subject: p.subject,
    name: p.name,
    given_name: p.given_name,
    family_name: p.family_name,
    email: p.email,
    picture: p.picture,
  };
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length <= 2048 ? v : null);

/** A profile from OpenID claims. */
export function profileFromClaims(userId: string, subject: string, c: Record<string, unknown>): ProfileRecord {
  return {
    user_id: userId,
    subject,
    name: str(c.name),
    given_name: str(c.given_name),
    family_name: str(c.family_name),
    email: str(c.email),
    picture: str(c.picture),
  };
}

export function registerProfileRoutes(r: Router, stores: Stores): void {
  r.add({
    method: 'get',
    path: '/biome/profiles',
    permission: 'identity.profile.read',
    minVersion: 2,
    reply: nodeReplies.profiles,
    handler: () => json(Array.from(stores.profiles.getRange({}).map(({ value }) => profileJson(value)))),
  });

  r.add({
    method: 'get',
    path: '/biome/profiles/:user_id',
    permission: 'identity.profile.read',
    minVersion: 2,
    reply: nodeReplies.profile,
    handler: ({ params }) => {
      const p = stores.profiles.get(params.user_id);
      if (!p) throw nodeErrors.userNotFound({ id: params.user_id });
      return json(profileJson(p));
    },
  });

  r.add({
    method: 'get',
    path: '/biome/profile',
    permission: 'authenticated',
    minVersion: 2,
    reply: nodeReplies.profile,
    handler: (c) => {
      const userId = requireUser(c);
      const p = stores.profiles.get(userId);
      if (!p) throw nodeErrors.profileNotFound({ id: userId });
      return json(profileJson(p));
    },
  });
}
