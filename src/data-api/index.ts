/**
 * The supply-chain data API (docs/data-api.md): JSON records read from the
 * read model the committer keeps, JSON mutations built into supply-chain transactions
 * and signed by the node (or a chosen agent key), client-signed BatchLists at
 * POST /batches, and batch statuses by batch id or event id.
 */
import type { RootDatabase } from 'lmdb';
import type { HttpServer } from '../http/server.js';
import { isLoopback, type Config } from '../config.js';
import type { Ledger } from '../ledger/ledger.js';
import type { Signer } from '../crypto/secp256k1.js';
import { registerAgents } from './agents.js';
import { DataAuth, type DataAuthDeps } from './auth.js';
import { log } from '../log.js';
import { Backends, type ServiceResolver } from './backend.js';
import { batchListBody, postBatches } from './batches.js';
import { registerLocations } from './locations.js';
import { registerOrganizations } from './organizations.js';
import { registerPoVersions } from './po-versions.js';
import { registerProducts } from './products.js';
import { registerPurchaseOrders } from './purchase-orders.js';
import { registerRoles } from './roles.js';
import { dataBinding, DataRouter, type DataRoute } from './router.js';
import { dataReplies } from './replies.js';
import { mount } from '../http/route.js';
import { registerSchemas } from './schemas.js';
import { Signers } from './signers.js';
import { batchStatuses, statusesQuery } from './statuses.js';
import { waitQuery } from '../http/wait.js';

export type { ServiceLedger, ServiceResolver } from './backend.js';

export interface DataApiContext {
  config: Config;
  db: RootDatabase;
  ledger: Ledger;
  /** The node's key: signs the batches this API builds. */
  nodeSigner: Signer;
  /**
   * Ledgers of circuits' state services, by `<circuit>::<service>` id (query
   * `service_id`). Absent: only the node's own ledger, every service id is unknown.
   */
  services?: ServiceResolver;
  /**
   * The node API's identities and grants, used when `config.dataAuth` is on (docs/data-api.md,
   * "Authorization"). Required then.
   */
  auth?: DataAuthDeps;
}

export interface DataApi {
  close(): Promise<void>;
}

export interface DataRoutes {
  routes: DataRoute[];
  backends: Backends;
  auth: DataAuth | null;
}

/** The route table of the data API (its handlers can be called without a server). */
export function dataApiRoutes(ctx: DataApiContext): DataRoutes {
  const signers = new Signers(ctx.nodeSigner, ctx.config.dataDir);
  const backends = new Backends({ ledger: ctx.ledger, db: ctx.db }, ctx.services, signers);
  let auth: DataAuth | null = null;
  if (ctx.config.dataAuth) {
    if (!ctx.auth) throw new Error('data API authorization is on but no identities were given');
    auth = new DataAuth(ctx.auth, ctx.nodeSigner.publicKey);
  } else if (!isLoopback(ctx.config.dataBind.host)) {
    log.warn(`data API on ${ctx.config.dataBind.host} without authorization: anyone who reaches it writes with every key it holds`);
  }
  const r = new DataRouter();
  r.route({
    method: 'post',
    path: '/batches',
    reply: dataReplies.submitted,
    query: waitQuery,
    body: batchListBody,
    handler: ({ be, body, query: wait }) => postBatches(be, body, wait),
  });
  r.route({
    method: 'get',
    path: '/batch_statuses',
    reply: dataReplies.statuses,
    query: statusesQuery,
    handler: ({ req, be, query }) => batchStatuses(req, be, query),
  });
  registerOrganizations(r);
  registerAgents(r);
  registerRoles(r);
  registerSchemas(r);
  registerProducts(r);
  registerLocations(r);
  registerPurchaseOrders(r);
  registerPoVersions(r);
  return { routes: r.routes, backends, auth };
}

export function registerDataApi(server: HttpServer, ctx: DataApiContext): DataApi {
  const { routes, backends, auth } = dataApiRoutes(ctx);
  mount(server, dataBinding(backends, auth), routes);
  return { close: async () => {} };
}
