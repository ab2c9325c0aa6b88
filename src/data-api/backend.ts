/**
 * The ledger a request works on. Without `service_id` it is the node's own ledger; with
 * `service_id=<circuit>::<service>` it is the ledger of that circuit's state service,
 * found through the resolver the node passes in (a circuit this node is not a member of,
 * or a service it does not run: 404). Each ledger has its own read model and event store,
 * told apart by the prefix of their sub-database names in the LMDB environment.
 */
import type { RootDatabase } from 'lmdb';
import type { Req } from '../http/server.js';
import type { SubmitResult } from '../ledger/ingest.js';
import type { StatusEntry } from '../ledger/query.js';
import { EventStore } from './events.js';
import { ReadModel } from '../ledger/read-model/reader.js';
import type { Signers } from './signers.js';
import { dataErrors } from './errors.js';

/** What the data API needs of a ledger: the node's own Ledger, or a circuit's state service. */
export interface DataLedger {
  /** Set once the ledger acknowledges nothing more (503). */
  readonly fault: string | null;
  /** A client-signed BatchList: verified, then queued. */
  submit(body: Uint8Array): Promise<SubmitResult>;
  /** Batches this node built and signed; durable when this resolves. */
  submitTrusted(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void>;
  status(id: string): StatusEntry;
  /** Resolves when none of `ids` is PENDING any more, or after `timeoutMs`. */
  waitFor(ids: string[], timeoutMs: number): Promise<void>;
}

/** A ledger and the LMDB environment its read model is kept in. */
export interface ServiceLedger {
  ledger: DataLedger;
  db: RootDatabase;
  /** Prefix of its read-model (and event) sub-database names; '' or absent: the node ledger's. */
  prefix?: string;
  /** It executes Sabre only: the supply-chain transactions built for it are Sabre-wrapped. */
  sabre?: boolean;
}

/** Finds the ledger of a circuit's state service by `<circuit>::<service>` id. */
export type ServiceResolver = (serviceId: string) => ServiceLedger | undefined;

export interface DataBackend {
  /** As the request gave it; echoed as `service_id` on every record. */
  serviceId: string | undefined;
  ledger: DataLedger;
  rm: ReadModel;
  events: EventStore;
  signers: Signers;
  /** Build Sabre-wrapped transactions (ExecuteContractAction of the contract by name). */
  sabre: boolean;
}

const SERVICE_ID_RE = /^[^:]+::[^:]+$/;

export class Backends {
  readonly #default: ServiceLedger;
  readonly #resolve: ServiceResolver | undefined;
  readonly #signers: Signers;
  /** Per environment, per prefix: opened once (never inside a write transaction). */
  readonly #stores = new WeakMap<RootDatabase, Map<string, { rm: ReadModel; events: EventStore }>>();

  constructor(def: ServiceLedger, resolve: ServiceResolver | undefined, signers: Signers) {
    this.#default = def;
    this.#resolve = resolve;
    this.#signers = signers;
    this.#storesOf(def.db, def.prefix ?? '');
  }

  #storesOf(db: RootDatabase, prefix: string): { rm: ReadModel; events: EventStore } {
    let byPrefix = this.#stores.get(db);
    if (!byPrefix) {
      byPrefix = new Map();
      this.#stores.set(db, byPrefix);
    }
    let s = byPrefix.get(prefix);
    if (!s) {
      s = { rm: new ReadModel(db, prefix), events: new EventStore(db, prefix) };
      byPrefix.set(prefix, s);
    }
    return s;
  }

  /** The backend a request names; 400 for a malformed and 404 for an unknown service id. */
  forRequest(req: Req): DataBackend {
    const serviceId = req.query.get('service_id') ?? undefined;
    let target = this.#default;
    if (serviceId !== undefined) {
      if (!SERVICE_ID_RE.test(serviceId)) {
        throw dataErrors.serviceIdNotQualified();
      }
      const found = this.#resolve?.(serviceId);
      if (found === undefined) throw dataErrors.serviceNotFound({ id: serviceId });
      target = found;
    }
    return {
      serviceId,
      ledger: target.ledger,
      ...this.#storesOf(target.db, target.prefix ?? ''),
      signers: this.#signers,
      sabre: target.sabre === true,
    };
  }
}
