/**
 * Read access to the supply-chain read model the committer keeps in step with each block
 * (sub-databases named in GRID_DB, msgpack values). Reads are synchronous and see every
 * block whose event has reached this thread: a record is readable the moment its batch
 * reports COMMITTED.
 */
import type { Database, RootDatabase } from 'lmdb';
import { readModelDbName } from '../../store/names.js';
import { GRID_DB } from './keys.js';
import { openStore } from '../../store/checksum.js';
import type {
  AgentRecord,
  AlternateIdRecord,
  LocationRecord,
  OrganizationRecord,
  PoAlternateIdRecord,
  ProductRecord,
  PurchaseOrderRecord,
  RevisionRecord,
  RoleRecord,
  SchemaRecord,
  VersionRecord,
} from './records.js';

export type GridDbName = keyof typeof GRID_DB;

/** Half-open key range covering every key that starts with `prefix`. */
function prefixRange(prefix: string): { start: string; end: string } | Record<string, never> {
  if (prefix === '') return {};
  const last = prefix.charCodeAt(prefix.length - 1);
  return { start: prefix, end: prefix.slice(0, -1) + String.fromCharCode(last + 1) };
}

export interface Slice<T> {
  items: T[];
  /** Size of the whole collection (or filtered set), not of the page. */
  total: number;
}

/** A record of `grid.agent_key`: the `grid.agent` key of the agent with that public key. */
export interface AgentKeyRecord {
  key: string;
}

/**
 * The record each read-model sub-database holds, as the projector (projector.ts) writes it:
 * the reader's methods are typed by database name, so no read site names (or casts to) a
 * record type of its own.
 */
export interface GridRecords {
  organization: OrganizationRecord;
  agent: AgentRecord;
  agentByKey: AgentKeyRecord;
  role: RoleRecord;
  alternateId: AlternateIdRecord;
  schema: SchemaRecord;
  product: ProductRecord;
  location: LocationRecord;
  purchaseOrder: PurchaseOrderRecord;
  poVersion: VersionRecord;
  poRevision: RevisionRecord;
  poAlternateId: PoAlternateIdRecord;
  /** The `[database, key]` pairs a state address produced (projector.ts). */
  address: Array<[string, string]>;
}

type GridDbs = { readonly [N in GridDbName]: Database<GridRecords[N], string> };

export class ReadModel {
  readonly #dbs: GridDbs;

  /** `prefix`: the ledger's read-model prefix ('' for the node's own ledger; see store/names.ts). */
  constructor(root: RootDatabase, prefix = '') {
    const open = <N extends GridDbName>(name: N): Database<GridRecords[N], string> =>
      openStore<GridRecords[N], string>(root, readModelDbName(prefix, GRID_DB[name]));
    this.#dbs = {
      organization: open('organization'),
      agent: open('agent'),
      agentByKey: open('agentByKey'),
      role: open('role'),
      alternateId: open('alternateId'),
      schema: open('schema'),
      product: open('product'),
      location: open('location'),
      purchaseOrder: open('purchaseOrder'),
      poVersion: open('poVersion'),
      poRevision: open('poRevision'),
      poAlternateId: open('poAlternateId'),
      address: open('address'),
    };
  }

  #db<N extends GridDbName>(name: N): Database<GridRecords[N], string> {
    return this.#dbs[name];
  }

  get<N extends GridDbName>(name: N, key: string): GridRecords[N] | undefined {
    return this.#db(name).get(key);
  }

  has(name: GridDbName, key: string): boolean {
    return this.#db(name).doesExist(key);
  }

  /** One page of the records whose key starts with `prefix`, and how many there are. */
  page<N extends GridDbName>(name: N, prefix: string, offset: number, limit: number): Slice<GridRecords[N]> {
    const db = this.#db(name);
    const range = prefixRange(prefix);
    // getCount marks the options object it is given as count-only: pass a copy.
    const total = db.getCount({ ...range });
    const items: Array<GridRecords[N]> = [];
    if (offset < total) for (const { value } of db.getRange({ ...range, offset, limit })) items.push(value);
    return { items, total };
  }

  /** Every record whose key starts with `prefix`, in key order. */
  all<N extends GridDbName>(name: N, prefix = ''): Array<GridRecords[N]> {
    return Array.from(this.#db(name).getRange(prefixRange(prefix)), ({ value }) => value);
  }
}
