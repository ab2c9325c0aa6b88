/** User administration: list, fetch, update (password, new keys), delete (`/biome/users`). */
import { log } from '../log.js';
import { objectBody, optString, type JsonObject } from './body.js';
import { credentialsBody, PASSWORD_RULE } from './credentials-routes.js';
import { keyInput, keyJson, type KeyInput } from './keys-store.js';
import { json, type Router } from './router.js';
import { nodeReplies } from './replies.js';
import type { UserStore } from './users-store.js';
import type { UserRecord } from './stores.js';
import { nodeErrors } from './errors.js';

const userJson = (u: UserRecord): { username: string; user_id: string } => ({ username: u.username, user_id: u.user_id });

function newKeys(b: JsonObject): KeyInput[] {
  const v = b.new_key_pairs;
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw nodeErrors.newKeyPairsNotArray();
  if (v.length > 1000) throw nodeErrors.newKeyPairsTooMany();
  return v.map((k, i) => keyInput(k, `new_key_pairs[${i}].`));
}

export function registerUserRoutes(r: Router, users: UserStore): void {
  r.add({
    method: 'get',
    path: '/biome/users',
    permission: 'identity.user.read',
    reply: nodeReplies.users,
    handler: () => json(users.list().map(userJson)),
  });

  r.add({
    method: 'get',
    path: '/biome/users/:user_id',
    permission: 'identity.user.read',
    reply: nodeReplies.user,
    handler: ({ params }) => {
      const u = users.get(params.user_id);
      if (!u) throw nodeErrors.userNotFound({ id: params.user_id });
      return json(userJson(u));
    },
  });

  r.add({
    method: 'put',
    path: '/biome/users/:user_id',
    permission: 'identity.user.write',
    reply: nodeReplies.messageKeys,
    body: (req) => {
      const b = objectBody(req);
      const { username, password } = credentialsBody(b);
      return { username, password, newPassword: optString(b, 'new_password', PASSWORD_RULE), keys: newKeys(b) };
    },
    handler: async ({ params, body: { username, password, newPassword, keys } }) => {
      const userId = params.user_id;
      if (!users.get(userId)) throw nodeErrors.userNotFound({ id: userId });
      await users.checkPassword(username, password, userId);
      const added = await users.update(userId, newPassword, keys);
      log.info(`user ${userId} updated (${newPassword === undefined ? 'password kept' : 'password changed'}, ${added.length} key(s) added)`);
      return json({ message: 'Credentials and key updated successfully', data: added.map(keyJson) });
    },
  });

  r.add({
    method: 'del',
    path: '/biome/users/:user_id',
    permission: 'identity.user.write',
    reply: nodeReplies.message,
    handler: async ({ params }) => {
      const userId = params.user_id;
      if (!(await users.remove(userId))) throw nodeErrors.userNotFound({ id: userId });
      log.info(`user ${userId} deleted`);
      return json({ message: 'User deleted successfully' });
    },
  });
}
