/**
 * Who may do what: admin keys (every permission, key identities only), then role
 * assignments. Used by every route of the node API through `Router`.
 */
import type { AdminKeys } from './admin-keys.js';
import type { Rbac } from './rbac.js';
import type { Identity } from './identity.js';
import type { Permission } from './permissions.js';

export class Access {
  readonly #admin: AdminKeys;
  readonly #rbac: Rbac;

  constructor(admin: AdminKeys, rbac: Rbac) {
    this.#admin = admin;
    this.#rbac = rbac;
  }

  allowed(id: Identity, permission: Permission): boolean {
    if (id.kind === 'key') return this.#admin.has(id.publicKey) || this.#rbac.allows('key', id.publicKey, permission);
    return this.#rbac.allows('user', id.userId, permission);
  }
}
