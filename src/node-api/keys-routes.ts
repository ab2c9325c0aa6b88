/**
 * The caller's own keys (`/biome/keys`): list, replace all (v2), rename, add, fetch,
 * delete; and protocol version 1's delete form `/biome/users/{user_id}/keys/{public_key}`.
 */
import type { Answer } from '../http/route.js';
import { objectBody, parseJson, reqString } from './body.js';
import { keyInput, keyJson, type KeyStore } from './keys-store.js';
import { json, requireUser, type Router } from './router.js';
import { nodeReplies } from './replies.js';
import { nodeErrors } from './errors.js';

export function registerKeyRoutes(r: Router, keys: KeyStore): void {
  r.add({
    method: 'get',
    path: '/biome/keys',
    permission: 'authenticated',
    reply: nodeReplies.keys,
    handler: (c) => json(keys.list(requireUser(c)).map(keyJson)),
  });

  r.add({
    method: 'put',
    path: '/biome/keys',
    permission: 'authenticated',
    minVersion: 2,
    reply: nodeReplies.message,
    load: requireUser,
    body: (req) => {
      const body = parseJson(req);
      if (!Array.isArray(body)) throw nodeErrors.keysNotArray();
      if (body.length > 1000) throw nodeErrors.tooManyKeys();
      return body.map((k, i) => keyInput(k, `[${i}].`));
    },
    handler: async ({ loaded: userId, body }) => {
      await keys.replaceAll(userId, body);
      return json({ message: 'Keys replaced successfully' });
    },
  });

  r.add({
    method: 'patch',
    path: '/biome/keys',
    permission: 'authenticated',
    reply: nodeReplies.message,
    load: requireUser,
    body: (req) => {
      const b = objectBody(req);
      return { pk: reqString(b, 'public_key', { max: 520 }), name: reqString(b, 'new_display_name', { max: 256, empty: true }) };
    },
    handler: async ({ loaded: userId, body: { pk, name } }) => {
      if (!(await keys.rename(userId, pk, name))) throw nodeErrors.keyToRenameNotFound({ key: pk, user: userId });
      return json({ message: 'Key updated successfully' });
    },
  });

  r.add({
    method: 'post',
    path: '/biome/keys',
    permission: 'authenticated',
    reply: nodeReplies.messageKey,
    load: requireUser,
    body: (req) => keyInput(objectBody(req)),
    handler: async ({ loaded: userId, body }) => {
      const added = await keys.add(userId, body);
      return json({ message: 'Key added successfully', data: keyJson(added) });
    },
  });

  r.add({
    method: 'get',
    path: '/biome/keys/:public_key',
    permission: 'authenticated',
    reply: nodeReplies.key,
    handler: (c) => {
      const userId = requireUser(c);
      const k = keys.get(userId, c.params.public_key);
      if (!k) throw nodeErrors.keyNotFound({ key: c.params.public_key, user: userId });
      return json({ data: keyJson(k) });
    },
  });

  const remove = async (userId: string, pk: string): Promise<Answer> => {
    const k = await keys.remove(userId, pk);
    if (!k) throw nodeErrors.keyNotFound({ key: pk, user: userId });
    return json({ message: 'Key successfully deleted', data: keyJson(k) });
  };

  r.add({
    method: 'del',
    path: '/biome/keys/:public_key',
    permission: 'authenticated',
    reply: nodeReplies.messageKey,
    handler: (c) => remove(requireUser(c), c.params.public_key),
  });

  // The spec's version 1 form names the user in the path. The rule is version 2's: a user
  // deletes only its own keys, so another user's id is refused.
  r.add({
    method: 'del',
    path: '/biome/users/:user_id/keys/:public_key',
    permission: 'authenticated',
    reply: nodeReplies.messageKey,
    handler: (c) => {
      const userId = requireUser(c);
      const { user_id: pathUser, public_key: pk } = c.params;
      if (pathUser !== userId) throw nodeErrors.deleteOthersKey({ user: pathUser });
      return remove(userId, pk);
    },
  });
}
