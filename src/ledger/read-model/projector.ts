/**
 * Read model of the supply-chain records. For every changed address under `621dee` the
 * committer hands us the new raw value (or undefined); we decode it into the data API's
 * JSON records and keep them in named sub-databases, keyed so that key order is a stable
 * listing order. Which records an address produced last time is remembered in
 * `grid.address`, so that entries that disappear (deleted roles, products, locations,
 * removed versions) are removed too.
 */
import { decode } from '../../proto/index.js';
import {
  GRID_NAMESPACE,
  LOCATION_PREFIX,
  PIKE_AGENT_PREFIX,
  PIKE_ALT_ID_PREFIX,
  PIKE_ORG_PREFIX,
  PIKE_ROLE_PREFIX,
  PO_ENTRY_PREFIX,
  PRODUCT_PREFIX,
  SCHEMA_PREFIX,
} from '../../families/grid/addressing.js';
import {
  DATA_TYPE_NAMES,
  DataType,
  G,
  ProductNamespace,
  toJsonInt,
  type PropertyDefinitionMsg,
  type PropertyValueMsg,
  type PurchaseOrderVersionMsg,
} from '../../families/grid/common.js';
import { GRID_DB, KEY_SEP, gridKeys } from './keys.js';
import type {
  AgentRecord,
  AlternateIdRecord,
  DataTypeName,
  LocationRecord,
  OrganizationRecord,
  PoAlternateIdRecord,
  ProductRecord,
  PropertyDefinitionRecord,
  PropertyValueRecord,
  PurchaseOrderRecord,
  RevisionRecord,
  RoleRecord,
  SchemaRecord,
  VersionRecord,
} from './records.js';

/** What the projector writes through: the block's LMDB transaction, by sub-database. */
export interface ReadModelWriter {
  put(db: string, key: string, value: unknown): void;
  remove(db: string, key: string): void;
  get(db: string, key: string): unknown;
}

export interface BlockInfo {
  blockNum: number;
  blockId: string;
  /** Unix seconds. */
  timestamp: number;
}

/**
 * A projector keeps a read model in step with state. The committer calls it inside the
 * block's LMDB transaction for every address the block changed (value undefined = deleted).
 */
export interface Projector {
  /** Namespaces (6 hex) this projector wants to hear about. */
  namespaces: string[];
  project(address: string, value: Uint8Array | undefined, rm: ReadModelWriter, block: BlockInfo): void;
}

// ------------------------------------------------------------------ decoding

type Row = [db: string, key: string, value: object];

/** Products and locations share the namespace values (GS1 only). */
function namespaceName(n: number): string {
  return n === ProductNamespace.GS1 ? 'GS1' : 'UNSET_NAMESPACE';
}

function dataTypeName(n: number): DataTypeName {
  return DATA_TYPE_NAMES[n] ?? 'UNSET_DATA_TYPE';
}

function propertyValueRecord(v: PropertyValueMsg): PropertyValueRecord {
  let value: unknown;
  switch (v.dataType) {
    case DataType.BYTES:
      value = Buffer.from(v.bytesValue ?? new Uint8Array()).toString('base64');
      break;
    case DataType.BOOLEAN:
      value = v.booleanValue;
      break;
    case DataType.NUMBER:
      value = toJsonInt(v.numberValue);
      break;
    case DataType.STRING:
      value = v.stringValue;
      break;
    case DataType.ENUM:
      value = v.enumValue;
      break;
    case DataType.STRUCT:
      value = v.structValues.map(propertyValueRecord);
      break;
    case DataType.LAT_LONG:
      value = { latitude: toJsonInt(v.latLongValue?.latitude), longitude: toJsonInt(v.latLongValue?.longitude) };
      break;
    default:
      value = null;
  }
  return { name: v.name, data_type: dataTypeName(v.dataType), value };
}

function propertyDefinitionRecord(d: PropertyDefinitionMsg): PropertyDefinitionRecord {
  return {
    name: d.name,
    data_type: dataTypeName(d.dataType),
    description: d.description,
    required: d.required,
    number_exponent: d.numberExponent,
    enum_options: [...d.enumOptions],
    struct_properties: d.structProperties.map(propertyDefinitionRecord),
    ...(d.valueJson ? { value: jsonOr(d.valueJson) } : {}),
  };
}

/** Parsed JSON text; text that is not JSON (written by another client) stays a string. */
function jsonOr(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function pikeRows(address: string, value: Uint8Array, ts: number): Row[] {
  if (address.startsWith(PIKE_AGENT_PREFIX)) {
    const list = decode(G.AgentList, value);
    return list.agents.flatMap((a): Row[] => {
      const metadata: Record<string, string> = {};
      for (const m of a.metadata) metadata[m.key] = m.value;
      const rec: AgentRecord = {
        public_key: a.publicKey,
        org_id: a.orgId,
        active: a.active,
        roles: [...a.roles],
        metadata,
        last_updated: ts,
      };
      const key = gridKeys.agent(a.orgId, a.publicKey);
      return [
        [GRID_DB.agent, key, rec],
        [GRID_DB.agentByKey, gridKeys.agentByKey(a.publicKey), { key }],
      ];
    });
  }
  if (address.startsWith(PIKE_ORG_PREFIX)) {
    const list = decode(G.OrganizationList, value);
    return list.organizations.map((o): Row => {
      const rec: OrganizationRecord = {
        id: o.orgId,
        name: o.name,
        alternate_ids: o.alternateIds.map((a) => `${a.idType}:${a.id}`),
        locations: [...o.locations],
        metadata: o.metadata.map((m) => ({ [m.key]: m.value })),
        last_updated: ts,
      };
      return [GRID_DB.organization, gridKeys.organization(o.orgId), rec];
    });
  }
  if (address.startsWith(PIKE_ROLE_PREFIX)) {
    const list = decode(G.RoleList, value);
    return list.roles.map((r): Row => {
      const rec: RoleRecord = {
        name: r.name,
        org_id: r.orgId,
        description: r.description,
        active: r.active,
        permissions: [...r.permissions],
        allowed_organizations: [...r.allowedOrganizations],
        inherit_from: [...r.inheritFrom],
        last_updated: ts,
      };
      return [GRID_DB.role, gridKeys.role(r.orgId, r.name), rec];
    });
  }
  if (address.startsWith(PIKE_ALT_ID_PREFIX)) {
    const list = decode(G.AlternateIdIndexEntryList, value);
    return list.entries.map((e): Row => {
      const rec: AlternateIdRecord = { id_type: e.idType, id: e.id, org_id: e.gridIdentityId };
      return [GRID_DB.alternateId, gridKeys.alternateId(e.idType, e.id), rec];
    });
  }
  return [];
}

function versionRecord(v: PurchaseOrderVersionMsg): VersionRecord {
  return {
    version_id: v.versionId,
    workflow_state: v.workflowState,
    is_draft: v.isDraft,
    current_revision_number: Number(toJsonInt(v.currentRevisionId)),
    revisions: v.revisions.map((r) => Number(toJsonInt(r.revisionId))).sort((a, b) => a - b),
  };
}

function purchaseOrderRows(value: Uint8Array): Row[] {
  const list = decode(G.PurchaseOrderList, value);
  const rows: Row[] = [];
  for (const po of list.purchaseOrders) {
    const rec: PurchaseOrderRecord = {
      uid: po.uid,
      workflow_state: po.workflowState,
      buyer_org_id: po.buyerOrgId,
      seller_org_id: po.sellerOrgId,
      is_closed: po.isClosed,
      ...(po.acceptedVersionNumber !== '' ? { accepted_version_number: po.acceptedVersionNumber } : {}),
      alternate_ids: po.alternateIds.map((a) => ({ id_type: a.idType, id: a.id, po_uid: a.poUid })),
      versions: po.versions.map(versionRecord),
      created_at: toJsonInt(po.createdAt),
      workflow_id: po.workflowId,
    };
    rows.push([GRID_DB.purchaseOrder, gridKeys.purchaseOrder(po.uid), rec]);
    for (const v of po.versions) {
      rows.push([GRID_DB.poVersion, gridKeys.poVersion(po.uid, v.versionId), versionRecord(v)]);
      for (const r of v.revisions) {
        const n = Number(toJsonInt(r.revisionId));
        const rev: RevisionRecord = {
          revision_number: n,
          submitter: r.submitter,
          created_at: toJsonInt(r.createdAt),
          order_xml_v3_4: r.orderXmlV3_4,
        };
        rows.push([GRID_DB.poRevision, gridKeys.poRevision(po.uid, v.versionId, n), rev]);
      }
    }
    for (const a of po.alternateIds) {
      const alt: PoAlternateIdRecord = { id_type: a.idType, id: a.id, po_uid: po.uid };
      rows.push([GRID_DB.poAlternateId, gridKeys.poAlternateId(a.idType, a.id, po.uid), alt]);
    }
  }
  return rows;
}

/** The read-model rows a state value at `address` stands for. */
export function gridRecords(address: string, value: Uint8Array, timestamp: number): Row[] {
  if (address.startsWith('621dee05')) return pikeRows(address, value, timestamp);
  if (address.startsWith(SCHEMA_PREFIX)) {
    const list = decode(G.SchemaList, value);
    return list.schemas.map((s): Row => {
      const rec: SchemaRecord = {
        name: s.name,
        description: s.description,
        owner: s.owner,
        properties: s.properties.map(propertyDefinitionRecord),
        last_updated: timestamp,
      };
      return [GRID_DB.schema, gridKeys.schema(s.name), rec];
    });
  }
  if (address.startsWith(PRODUCT_PREFIX)) {
    const list = decode(G.ProductList, value);
    return list.entries.map((p): Row => {
      const rec: ProductRecord = {
        product_id: p.productId,
        product_address: address,
        product_namespace: namespaceName(p.productNamespace),
        owner: p.owner,
        properties: p.properties.map(propertyValueRecord),
        last_updated: timestamp,
      };
      return [GRID_DB.product, gridKeys.product(p.productId), rec];
    });
  }
  if (address.startsWith(LOCATION_PREFIX)) {
    const list = decode(G.LocationList, value);
    return list.entries.map((l): Row => {
      const rec: LocationRecord = {
        location_id: l.locationId,
        location_namespace: namespaceName(l.namespace),
        owner: l.owner,
        properties: l.properties.map(propertyValueRecord),
        last_updated: timestamp,
      };
      return [GRID_DB.location, gridKeys.location(l.locationId), rec];
    });
  }
  if (address.startsWith(PO_ENTRY_PREFIX)) return purchaseOrderRows(value);
  return [];
}

// ------------------------------------------------------------------ projector

const pairKey = (db: string, key: string): string => `${db}${KEY_SEP}${key}`;

/** Equal apart from `last_updated`: keeps the old timestamp for an unchanged record. */
function sameRecord(a: unknown, b: object): boolean {
  if (typeof a !== 'object' || a === null) return false;
  const strip = (o: object): string => JSON.stringify({ ...o, last_updated: undefined });
  return strip(a) === strip(b);
}

/** The `grid.address` record: the `[database, key]` pairs an address produced (none when absent). */
function isPairList(v: unknown): v is Array<[string, string]> {
  return Array.isArray(v) && v.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && typeof p[1] === 'string');
}

export const gridProjector: Projector = {
  namespaces: [GRID_NAMESPACE],
  project(address: string, value: Uint8Array | undefined, rm: ReadModelWriter, block: BlockInfo): void {
    let rows: Row[] = [];
    if (value !== undefined && value.length > 0) {
      try {
        rows = gridRecords(address, value, block.timestamp);
      } catch {
        // Undecodable bytes in our namespace: the address then holds no records.
        rows = [];
      }
    }
    const stored = rm.get(GRID_DB.address, address);
    const previous = isPairList(stored) ? stored : [];
    const current = new Set(rows.map(([db, key]) => pairKey(db, key)));
    for (const [db, key] of previous) {
      if (!current.has(pairKey(db, key))) rm.remove(db, key);
    }
    for (const [db, key, rec] of rows) {
      if ('last_updated' in rec && sameRecord(rm.get(db, key), rec)) continue;
      rm.put(db, key, rec);
    }
    if (rows.length === 0) rm.remove(GRID_DB.address, address);
    else
      rm.put(
        GRID_DB.address,
        address,
        rows.map(([db, key]) => [db, key]),
      );
  },
};
