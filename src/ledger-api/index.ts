/** The ledger gateway: Sawtooth 1.2 REST API routes and the state-delta websocket. */
import type { HttpServer } from '../http/server.js';
import { answer, mount } from '../http/route.js';
import type { Config } from '../config.js';
import type { Ledger } from '../ledger/ledger.js';
import { submitRoutes } from './submit.js';
import { blockRoutes } from './blocks.js';
import { batchRoutes } from './batches.js';
import { stateRoutes } from './state.js';
import { receiptRoutes } from './receipts.js';
import { ChainReader } from './chain.js';
import { CommitWaits } from './waits.js';
import { Subscriptions } from './subscriptions.js';
import { selfUrl } from './links.js';
import { replies } from './schemas.js';
import { ledgerError, LedgerErrorCode } from './errors.js';
import { ledgerBinding, ledgerRoute, type LedgerRoute } from './route.js';
import type { ClusterMember } from '../cluster/member.js';
import { clusterRoutes } from './cluster-blocks.js';

export interface LedgerApiContext {
  config: Config;
  ledger: Ledger;
  /** A cluster member: its peers are the other live members, and /status shows the cluster. */
  cluster?: ClusterMember | null;
  /** The background read of every stored record (src/store/scan.ts's ScanProgress), shown in /status; undefined: none (a new directory, `--start-scan off`). */
  startScan?: () => ScanView | undefined;
}

/** /status's view of the background read of every record. */
export interface ScanView {
  state: string;
  read_bytes: number;
  total_bytes: number;
}

export interface LedgerApi {
  close(): void;
}

function networkRoutes(config: Config, ledger: Ledger, cluster: ClusterMember | null, startScan?: () => ScanView | undefined): LedgerRoute[] {
  // Configured peers (a single node has none), or a cluster's other live members.
  const peers = (): string[] => (cluster ? cluster.peers() : config.peers);
  return [
    ledgerRoute({ method: 'get', path: '/peers', reply: replies.peers, handler: ({ req }) => answer({ data: peers(), link: selfUrl(req) }) }),
    ledgerRoute({
      method: 'get',
      path: '/status',
      reply: replies.status,
      handler: ({ req }) => {
        // A node with a storage alarm raised is read-only, not a healthy validator: 503 code 18
        // with the alarm's cause, so that health checks and load balancers take it out of the
        // write rotation until the alarm clears (reads keep working).
        if (ledger.fault !== null)
          throw ledgerError(LedgerErrorCode.ValidatorDisconnected, `The validator is read-only, storage alarm raised: ${ledger.fault}`, true);
        const scan = startScan?.();
        return answer({
          data: {
            endpoint: config.endpoint,
            peers: [...peers()].sort().map((endpoint) => ({ endpoint })),
            ...(cluster ? { cluster: cluster.view() } : {}),
            ...(ledger.componentEndpoint ? { transaction_processors: processorsView(ledger) } : {}),
            ...(scan ? { start_scan: scan } : {}),
          },
          link: selfUrl(req),
        });
      },
    }),
  ];
}

/** /status's view of the transaction processor endpoint: who serves what, and what waits. */
function processorsView(ledger: Ledger): object {
  const r = ledger.processors;
  return {
    families: r?.families ?? [],
    set_aside: (r?.setAside ?? []).map((s) => ({ family: s.family, reason: s.why })),
    batches_set_aside: ledger.setAsideCount,
    transactions_set_aside: r?.transactionsSetAside ?? 0,
    processors_set_aside: r?.processorsSetAside ?? 0,
  };
}

export interface LedgerRoutes {
  routes: LedgerRoute[];
  chain: ChainReader;
  waits: CommitWaits;
}

/** The route table of the ledger gateway (its handlers can be called without a server). */
export function ledgerApiRoutes(ctx: LedgerApiContext): LedgerRoutes {
  const { ledger, config } = ctx;
  const chain = new ChainReader(ledger, { decodedBytes: config.blockCacheBytes, jsonBytes: config.blockJsonCacheBytes });
  const waits = new CommitWaits(ledger);
  // Read routes first, so that a 405's Allow header lists GET before POST.
  const routes = [
    ...batchRoutes(chain),
    ...submitRoutes(ledger),
    ...blockRoutes(chain),
    ...stateRoutes(chain),
    ...receiptRoutes(ledger, waits),
    ...networkRoutes(config, ledger, ctx.cluster ?? null, ctx.startScan),
    ...(ctx.cluster ? clusterRoutes(ledger) : []),
  ];
  return { routes, chain, waits };
}

export function registerLedgerApi(server: HttpServer, ctx: LedgerApiContext): LedgerApi {
  const { config } = ctx;
  const { routes, chain, waits } = ledgerApiRoutes(ctx);
  mount(server, ledgerBinding, routes);
  const subscriptions = new Subscriptions(server, chain, { maxSockets: config.wsMaxSockets, maxBufferedBytes: config.wsMaxBufferedBytes });
  return {
    close: () => {
      waits.close();
      subscriptions.close();
    },
  };
}
