/**
 * Wiring of circuits: the peer network, the admin service over the node's LMDB
 * environment, and the node API's /admin and /ws/admin routes.
 */
import type { RootDatabase } from 'lmdb';
import type { Config } from '../config.js';
import type { HttpServer } from '../http/server.js';
import { log } from '../log.js';
import type { Router } from '../node-api/router.js';
import type { Authenticator } from '../auth/identity.js';
import type { Access } from '../auth/access.js';
import type { Registry } from '../node-api/registry-store.js';
import type { NodeIdentity } from '../node-api/status.js';
import { loadOrCreateKey } from '../store/keys.js';
import { AdminService } from './admin-service.js';
import { PeerNetwork } from './peers.js';
import { AdminEvents, registerAdminRoutes } from './routes.js';
import { AdminStore } from './store.js';
import { ScabbardServices } from '../scabbard/index.js';
import { registerScabbardRoutes } from '../scabbard/routes.js';
import type { BodyVerifier } from '../scabbard/service.js';

export interface CircuitsContext {
  config: Config;
  db: RootDatabase;
  server: HttpServer;
  router: Router;
  auth: { authn: Authenticator; access: Access };
  registry: Registry;
  identity: Promise<NodeIdentity>;
  /** The node's key file: it signs the blocks of the circuit ledgers this node keeps (their committer threads read it). */
  nodeKeyFile: string;
  /** Checks batch signatures for the circuit ledgers in the node ledger's verify workers. */
  verifyBodies: BodyVerifier;
}

export interface Circuits {
  /** The bound peer network port. */
  port: number;
  /** The state services (scabbard) of the Active circuits this node is a member of. */
  services: ScabbardServices;
  close(): Promise<void>;
}

/**
 * Registers the routes (call before the HTTP server listens), listens on the peer network
 * and re-establishes the peers of stored circuits and proposals.
 */
export async function startCircuits(ctx: CircuitsContext): Promise<Circuits> {
  const { config } = ctx;
  const peering = loadOrCreateKey(config.peeringKeyFile);
  const { nodeId } = await ctx.identity;
  const net = new PeerNetwork({
    bind: config.networkBind,
    me: { nodeId, signer: peering },
    heartbeatMs: config.circuits.heartbeatMs,
    retryMs: config.circuits.retryMs,
    retryMaxMs: config.circuits.retryMaxMs,
    handshakeMs: 10_000,
    queueTtlMs: config.circuits.queueTtlMs,
    maxFrame: Math.max(16 * 1024 * 1024, config.maxBodyBytes * 2),
  });
  const admin = new AdminService(new AdminStore(ctx.db), net, {
    nodeId,
    peeringKey: peering.publicKey,
    keysOf: (id) => ctx.registry.get(id)?.keys,
    coordinatorTimeoutMs: config.circuits.coordinatorTimeoutMs,
    participantTimeoutMs: config.circuits.participantTimeoutMs,
    holdPeersMs: 10_000,
  });
  registerAdminRoutes(ctx.router, admin);
  const services = new ScabbardServices(admin, ctx.db, ctx.nodeKeyFile, ctx.verifyBodies);
  registerScabbardRoutes(ctx.router, services);
  const events = new AdminEvents(ctx.server, admin, ctx.auth.authn, ctx.auth.access);
  const port = await net.listen();
  log.info(`peering public key ${peering.publicKey}`);
  admin.start();
  await services.start();
  return {
    port,
    services,
    async close(): Promise<void> {
      await services.close();
      events.close();
      admin.close();
      await net.close();
    },
  };
}
