/** Interface B, the supply-chain data API. */
import type { RootDatabase } from 'lmdb';
import type { HttpServer } from '../http/server.js';
import type { Config } from '../config.js';
import type { Ledger } from '../ledger/ledger.js';

export interface DataApiContext {
  config: Config;
  db: RootDatabase;
  ledger: Ledger;
}

export interface DataApi {
  close(): Promise<void>;
}

export function registerDataApi(_server: HttpServer, _ctx: DataApiContext): DataApi {
  return { close: async () => {} };
}
