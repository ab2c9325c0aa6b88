/**
 * Authorization of a request to the node API, the data API or the circuit routes:
 * credentials first (401, with a message that says what is expected), then the permission
 * (403). Each refusal is logged with the reason, never the token.
 */
import type { Req } from '../http/server.js';
import { log } from '../log.js';
import type { Access } from './access.js';
import type { Authenticator, Identity } from './identity.js';
import type { Permission } from './permissions.js';
import { authErrors } from './errors.js';

/** What a route asks of its caller beyond being public: any authenticated identity, or a permission. */
export type Requirement = 'authenticated' | Permission;

function who(id: Identity): string {
  return id.kind === 'key' ? `key ${id.publicKey}` : `user ${id.userId}`;
}

/** The caller's identity, or the ApiError (401, 403) that refuses the request; `api` names the interface in the log. */
export async function authorize(authn: Authenticator, access: Access, req: Req, guard: Requirement, api: string): Promise<Identity> {
  const r = await authn.authenticateOrExplain(req);
  if ('problem' in r) {
    log.info(`${api}: 401 on ${req.method} ${req.path}: ${r.problem.split(';')[0]}`);
    throw authErrors.notAuthorized({ problem: r.problem }, { 'www-authenticate': 'Bearer' });
  }
  if (guard !== 'authenticated' && !access.allowed(r.identity, guard)) {
    log.info(`${api}: 403 on ${req.method} ${req.path}: ${who(r.identity)} lacks ${guard}`);
    throw authErrors.lacksPermission({ permission: guard });
  }
  return r.identity;
}
