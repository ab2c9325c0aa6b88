/** Interface B, the supply-chain data API. */
import type { RootDatabase } from 'lmdb';
import type { HttpServer } from '../http/server.js';
import type { Config } from '../config.js';
import type { Ledger } from '../ledger/ledger.js';
import type { Signer } from '../crypto/secp256k1.js';

export interface DataApiContext {
  config: Config;
  db: RootDatabase;
  ledger: Ledger;
  /** The node's key: signs the batches this API builds. */
  nodeSigner: Signer;
}

export interface DataApi {
  close(): Promise<void>;
}

export function registerDataApi(_server: HttpServer, _ctx: DataApiContext): DataApi {
  return { close: async () => {} };
}
