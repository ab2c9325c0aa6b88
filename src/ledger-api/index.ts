/** Interface C, the ledger gateway: Sawtooth 1.2 REST API routes. */
import type { HttpServer } from '../http/server.js';
import type { Config } from '../config.js';
import type { Ledger } from '../ledger/ledger.js';
import { registerSubmit } from './submit.js';
import { registerBlocks } from './blocks.js';
import { registerState } from './state.js';
import { buildUrl } from './links.js';
import { serialize } from './json.js';

export interface LedgerApiContext {
  config: Config;
  ledger: Ledger;
}

export interface LedgerApi {
  close(): void;
}

export function registerLedgerApi(server: HttpServer, ctx: LedgerApiContext): LedgerApi {
  const { ledger, config } = ctx;
  registerSubmit(server, ledger);
  registerBlocks(server, ledger);
  registerState(server, ledger);
  server.route('get', '/peers', (req) => ({ status: 200, body: serialize.peers({ data: config.peers, link: buildUrl(req, '/peers') }) }));
  server.route('get', '/status', (req) => ({
    status: 200,
    body: serialize.status({
      data: { endpoint: config.endpoint, peers: [...config.peers].sort().map((endpoint) => ({ endpoint })) },
      link: buildUrl(req, '/status'),
    }),
  }));
  return { close: () => {} };
}
