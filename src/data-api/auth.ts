/**
 * The data API's authorization (docs/data-api.md, "Authorization"), when it is on: the
 * caller's `Authorization` header is resolved by the node API's identities (Biome,
 * Cylinder, OAuth2) and checked against its grants (admin keys file, roles):
 *
 * - GET (records, batch statuses): `data.read`
 * - POST/PUT/DELETE (JSON writes, client-signed `POST /batches`): `data.write`
 * - a write with `?signer=<public key>` other than the node's: also
 *   `data.sign.<public key>` or `data.sign.*`
 *
 * Upstream Grid's REST API has no authentication at all; anyone who reaches it writes
 * with every key it holds, so Cairn turns this on whenever the data API listens beyond loopback.
 */
import type { Req } from '../http/server.js';
import type { Authenticator, Identity } from '../auth/identity.js';
import type { Access } from '../auth/access.js';
import { authorize } from '../auth/authorize.js';
import type { Permission } from '../auth/permissions.js';
import { PUBLIC_KEY_RE } from './signers.js';

export interface DataAuthDeps {
  authn: Authenticator;
  access: Access;
}

export class DataAuth {
  readonly #deps: DataAuthDeps;
  readonly #nodeKey: string;

  constructor(deps: DataAuthDeps, nodePublicKey: string) {
    this.#deps = deps;
    this.#nodeKey = nodePublicKey;
  }

  /** The caller; throws 401 (no or bad credentials) or 403 (a permission is missing). */
  async check(req: Req): Promise<Identity> {
    const { authn, access } = this.#deps;
    const write = req.method !== 'GET' && req.method !== 'HEAD';
    const id = await authorize(authn, access, req, write ? 'data.write' : 'data.read', 'data');
    if (!write) return id;
    const signer = req.query.get('signer');
    // A malformed key is left to the handler's 400; the node's own key needs data.write only.
    if (signer === null || signer === this.#nodeKey || !PUBLIC_KEY_RE.test(signer)) return id;
    const perm: Permission = `data.sign.${signer}`;
    if (access.allowed(id, perm) || access.allowed(id, 'data.sign.*')) return id;
    return authorize(authn, access, req, perm, 'data');
  }
}
