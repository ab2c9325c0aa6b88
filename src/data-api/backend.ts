/**
 * The ledger a request works on. Without `service_id` it is the node's own ledger; with
 * `service_id=<circuit>::<service>` it is the ledger of that circuit's state service,
 * found through the resolver the node passes in (none yet: every service id is then
 * unknown, 404). Each ledger brings its own LMDB environment, hence its own read model
 * and event store.
 */
import type { RootDatabase } from 'lmdb';
import { ApiError, type Req } from '../http/server.js';
import type { Ledger } from '../ledger/ledger.js';
import { EventStore } from './events.js';
import { ReadModel } from './read-model/reader.js';
import type { Signers } from './signers.js';

/** A ledger and the LMDB environment its committer writes (blocks and read model). */
export interface ServiceLedger {
  ledger: Ledger;
  db: RootDatabase;
}

/** Finds the ledger of a circuit's state service by `<circuit>::<service>` id. */
export type ServiceResolver = (serviceId: string) => ServiceLedger | undefined;

export interface DataBackend {
  /** As the request gave it; echoed as `service_id` on every record. */
  serviceId: string | undefined;
  ledger: Ledger;
  rm: ReadModel;
  events: EventStore;
  signers: Signers;
}

const SERVICE_ID_RE = /^[^:]+::[^:]+$/;

export class Backends {
  readonly #default: ServiceLedger;
  readonly #resolve: ServiceResolver | undefined;
  readonly #signers: Signers;
  readonly #stores = new WeakMap<RootDatabase, { rm: ReadModel; events: EventStore }>();

  constructor(def: ServiceLedger, resolve: ServiceResolver | undefined, signers: Signers) {
    this.#default = def;
    this.#resolve = resolve;
    this.#signers = signers;
    this.#storesOf(def.db);
  }

  #storesOf(db: RootDatabase): { rm: ReadModel; events: EventStore } {
    let s = this.#stores.get(db);
    if (!s) {
      s = { rm: new ReadModel(db), events: new EventStore(db) };
      this.#stores.set(db, s);
    }
    return s;
  }

  /** The backend a request names; 400 for a malformed and 404 for an unknown service id. */
  forRequest(req: Req): DataBackend {
    const serviceId = req.query.get('service_id') ?? undefined;
    let target = this.#default;
    if (serviceId !== undefined) {
      if (!SERVICE_ID_RE.test(serviceId)) {
        throw new ApiError(400, 'Must provide a fully-qualified service_id: <circuit_id>::<service_id>');
      }
      const found = this.#resolve?.(serviceId);
      if (found === undefined) throw new ApiError(404, `Service ${serviceId} not found`);
      target = found;
    }
    return { serviceId, ledger: target.ledger, ...this.#storesOf(target.db), signers: this.#signers };
  }
}
