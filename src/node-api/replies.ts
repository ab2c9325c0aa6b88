/**
 * Reply schemas of the node API (compiled by fast-json-stringify when the routes are
 * mounted). Properties are listed in the order the handlers build them, so the bytes
 * are those JSON.stringify wrote. Registry metadata is open-ended (any string keys).
 */
import type { ReplySchema } from '../http/route.js';

const str = { type: 'string' } as const;
const strs = { type: 'array', items: str } as const;
const int = { type: 'integer' } as const;
const nullableStr = { type: ['string', 'null'] } as const;
const obj = (properties: Record<string, unknown>): ReplySchema => ({ type: 'object', properties });
const arr = (items: unknown): ReplySchema => ({ type: 'array', items });

const paging = obj({ current: str, offset: int, limit: int, total: int, first: str, prev: str, next: str, last: str });
const page = (items: unknown): ReplySchema => obj({ data: arr(items), paging });

const key = obj({ display_name: str, encrypted_private_key: str, public_key: str, user_id: str });
const user = obj({ username: str, user_id: str });
const profile = obj({
  user_id: str,
  subject: str,
  name: nullableStr,
  given_name: nullableStr,
  family_name: nullableStr,
  email: nullableStr,
  picture: nullableStr,
});
const role = obj({ role_id: str, display_name: str, permissions: strs });
const assignment = obj({ identity_type: str, identity: str, roles: strs });
const registryNode = obj({
  identity: str,
  endpoints: strs,
  display_name: str,
  keys: strs,
  metadata: { type: 'object', additionalProperties: str },
});

export const nodeReplies = {
  message: obj({ message: str }),
  registered: obj({ message: str, data: obj({ user_id: str, username: str }) }),
  login: obj({ message: str, user_id: str, token: str, refresh_token: str }),
  token: obj({ token: str }),
  verified: obj({ message: str, user_id: str }),
  keys: arr(key),
  key: obj({ data: key }),
  messageKey: obj({ message: str, data: key }),
  messageKeys: obj({ message: str, data: arr(key) }),
  users: arr(user),
  user,
  profiles: arr(profile),
  profile,
  permissions: obj({ data: arr(obj({ permission_id: str, permission_display_name: str, permission_description: str })) }),
  roles: page(role),
  role: obj({ data: role }),
  assignments: page(assignment),
  assignment: obj({ data: assignment }),
  registryNodes: page(registryNode),
  registryNode: obj({ data: registryNode }),
  oauthUsers: page(obj({ subject: str, user_id: str })),
  status: obj({ version: str, node_id: str, display_name: str, service_endpoint: str, network_endpoints: strs, advertised_endpoints: strs }),
  alarms: obj({ data: arr(obj({ kind: str, cause: str, since: str })) }),
} satisfies Record<string, ReplySchema>;
