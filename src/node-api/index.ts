/**
 * The node API: users and credentials, keys, profiles, OAuth,
 * permissions and grants, node status and the node registry. This module only wires
 * the stores, services and route tables together.
 */
import type { RootDatabase } from 'lmdb';
import type { HttpServer } from '../http/server.js';
import type { Config } from '../config.js';
import type { Signer } from '../crypto/secp256k1.js';
import { log } from '../log.js';
import { openStores } from './stores.js';
import { TokenService } from '../auth/tokens.js';
import { PasswordHasher } from '../auth/passwords.js';
import { LoginBackoff } from './backoff.js';
import { AdminKeys } from '../auth/admin-keys.js';
import { Rbac } from '../auth/rbac.js';
import { Access } from '../auth/access.js';
import { Authenticator } from '../auth/identity.js';
import { OidcClient } from './oauth-client.js';
import { OAuthSessions } from './oauth-sessions.js';
import { KeyStore } from './keys-store.js';
import { UserStore } from './users-store.js';
import { Registry } from './registry-store.js';
import { nodeBinding, Router, type NodeRoute } from './router.js';
import { mount } from '../http/route.js';
import { registerCredentialRoutes } from './credentials-routes.js';
import { registerUserRoutes } from './users-routes.js';
import { registerKeyRoutes } from './keys-routes.js';
import { registerProfileRoutes } from './profiles.js';
import { registerOAuthRoutes } from './oauth-routes.js';
import { registerAuthorizationRoutes } from './authorization-routes.js';
import { registerRegistryRoutes } from './registry-routes.js';
import { registerStatusRoute, resolveNodeIdentity, type NetworkEndpoints, type NodeIdentity } from './status.js';

export interface NodeApiContext {
  config: Config;
  db: RootDatabase;
  /** The validator's key (signs blocks). */
  nodeSigner: Signer;
  /** The admin key written on first start; listed in the admin keys file. */
  adminSigner: Signer;
  version: string;
}

export interface NodeApi {
  /** Identities and grants, shared with the data API's authorization. */
  auth: { authn: Authenticator; access: Access };
  /** For the circuit routes (src/circuits), declared in the same style. */
  router: Router;
  registry: Registry;
  identity: Promise<NodeIdentity>;
  /** The peer network endpoints /status shows, known once the network listens. */
  network: NetworkEndpoints;
  /** Mounts the routes added to `router` since the last call (before the server listens). */
  mountAdded(): void;
  close(): Promise<void>;
}

function oidcClient(config: Config): OidcClient | null {
  const { issuer, clientId, clientSecret } = config.oauth;
  if (!issuer || !clientId) {
    if (issuer || clientId) log.warn('OAuth needs both an issuer and a client id; OAuth login is off');
    return null;
  }
  return new OidcClient({ issuer, clientId, clientSecret, scope: 'openid profile email' });
}

export interface NodeRoutes {
  routes: NodeRoute[];
  /** Identities and grants, shared with the data API's authorization. */
  auth: { authn: Authenticator; access: Access };
  registry: Registry;
  identity: Promise<NodeIdentity>;
  network: NetworkEndpoints;
}

/** The route table of the node API (its handlers can be called without a server). */
export function nodeApiRoutes(ctx: NodeApiContext): NodeRoutes {
  const { config } = ctx;
  const stores = openStores(ctx.db);
  const tokens = new TokenService({ dataDir: config.dataDir, accessTtlSec: config.accessTokenTtlSec, refreshTtlSec: config.refreshTokenTtlSec });
  const client = oidcClient(config);
  const sessions = new OAuthSessions(stores, client, config.oauth.recheckSec);
  const rbac = new Rbac(stores);
  const access = new Access(new AdminKeys(config.adminKeysFile), rbac);
  const authn = new Authenticator(tokens, stores, sessions);
  const router = new Router();
  const keys = new KeyStore(stores);
  const hasher = new PasswordHasher(config.bcryptCost, { concurrency: config.passwordChecks, queue: config.passwordQueue });
  const byAddress = new LoginBackoff(config.loginBackoffMs, {
    lockAfter: config.loginAddressFailures,
    resetOnSuccess: false,
    what: 'client address',
  });
  const users = new UserStore(stores, hasher, new LoginBackoff(config.loginBackoffMs), keys, sessions, byAddress);
  const identity = resolveNodeIdentity(config, stores, ctx.nodeSigner.publicKey);
  identity.then(
    (id) => log.info(`node id ${id.nodeId} (${id.displayName})`),
    (err: unknown) => log.error('cannot store the node identity', err),
  );

  registerCredentialRoutes(router, users, tokens);
  registerUserRoutes(router, users);
  registerKeyRoutes(router, keys);
  registerProfileRoutes(router, stores);
  registerOAuthRoutes(router, { config, stores, client, sessions });
  registerAuthorizationRoutes(router, rbac, (id) => stores.profiles.get(id) !== undefined || stores.users.get(id) !== undefined);
  const registry = new Registry(stores);
  registerRegistryRoutes(router, registry);
  const network: NetworkEndpoints = { network: [], advertised: [] };
  registerStatusRoute(router, config, ctx.version, identity, network);
  return { routes: router.routes, auth: { authn, access }, registry, identity, network };
}

export function registerNodeApi(server: HttpServer, ctx: NodeApiContext): NodeApi {
  const { routes, auth, registry, identity, network } = nodeApiRoutes(ctx);
  const binding = nodeBinding(auth.authn, auth.access);
  mount(server, binding, routes);
  // Routes other parts of the node add later (the circuit admin service), mounted by mountAdded().
  const extra = new Router();
  return {
    auth,
    router: extra,
    registry,
    identity,
    network,
    mountAdded: () => mount(server, binding, extra.routes.splice(0)),
    async close(): Promise<void> {
      // Sub-databases close with the environment (owned by src/node.ts).
    },
  };
}
