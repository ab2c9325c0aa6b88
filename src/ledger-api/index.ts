/** Interface C, the ledger gateway: Sawtooth 1.2 REST API routes and the state-delta websocket. */
import { HttpError, type HttpServer, type Req } from '../http/server.js';
import type { Config } from '../config.js';
import type { Ledger } from '../ledger/ledger.js';
import { registerSubmit } from './submit.js';
import { registerBlocks } from './blocks.js';
import { registerBatches } from './batches.js';
import { registerState } from './state.js';
import { registerReceipts } from './receipts.js';
import { ChainReader } from './chain.js';
import { CommitWaits } from './waits.js';
import { Subscriptions } from './subscriptions.js';
import { selfUrl } from './links.js';
import { serialize } from './schemas.js';
import { ledgerError } from './errors.js';

export interface LedgerApiContext {
  config: Config;
  ledger: Ledger;
}

export interface LedgerApi {
  close(): void;
}

function registerNetwork(server: HttpServer, config: Config, ledger: Ledger): void {
  // Configured peers: a single node has none.
  server.route('get', '/peers', (req: Req) => ({ status: 200, body: serialize.peers({ data: config.peers, link: selfUrl(req) }) }));
  server.route('get', '/status', (req: Req) => {
    // A node that stopped on a fault is not a healthy validator: 503 code 18 with the reason,
    // so that health checks and load balancers take it out until it has restarted.
    if (ledger.fault !== null) throw ledgerError(18, `The validator stopped and is restarting: ${ledger.fault}`, true);
    return {
      status: 200,
      body: serialize.status({
        data: { endpoint: config.endpoint, peers: [...config.peers].sort().map((endpoint) => ({ endpoint })) },
        link: selfUrl(req),
      }),
    };
  });
}

export function registerLedgerApi(server: HttpServer, ctx: LedgerApiContext): LedgerApi {
  const { ledger, config } = ctx;
  const chain = new ChainReader(ledger);
  const waits = new CommitWaits(ledger);
  // Read routes first, so that a 405's Allow header lists GET before POST.
  registerBatches(server, chain);
  registerSubmit(server, ledger);
  registerBlocks(server, chain);
  registerState(server, chain);
  registerReceipts(server, ledger, waits);
  registerNetwork(server, config, ledger);
  const subscriptions = new Subscriptions(server, chain, { maxSockets: config.wsMaxSockets, maxBufferedBytes: config.wsMaxBufferedBytes });
  return {
    close: () => {
      waits.close();
      subscriptions.close();
    },
  };
}
