/**
 * Builds supply-chain transactions from JSON-ish action objects (what the data API
 * receives): the family name/version, input/output prefixes and protobuf payload of a
 * plain family transaction, plus the Sabre-wrapped form upstream clients send. Pure: the
 * caller signs and batches. Bad input throws GridBuildError (a 400 for the API).
 */
import {
  LOCATION_PREFIX,
  PIKE_PREFIX,
  PO_PREFIX,
  PRODUCT_PREFIX,
  SCHEMA_PREFIX,
  sabreContractAddress,
  sabreContractRegistryAddress,
  sabreNamespaceRegistryAddress,
} from './addressing.js';
import {
  alternateIds,
  bool,
  fail,
  isObj,
  list,
  metadataEntries,
  namespaceValue,
  propertyDefinition,
  propertyValue,
  str,
  strings,
  uint,
  type Obj,
} from './build-fields.js';
import {
  G,
  LocationAction,
  LocationNamespace,
  PikeAction,
  ProductAction,
  ProductNamespace,
  PurchaseOrderAction,
  SabreAction,
  SchemaAction,
  encodeMsg,
} from './common.js';
import { LOCATION_FAMILY } from './location.js';
import { PIKE_FAMILY } from './pike.js';
import { PRODUCT_FAMILY } from './product.js';
import { PURCHASE_ORDER_FAMILY } from './purchase-order.js';
import { SABRE_FAMILY } from './sabre.js';
import { SCHEMA_FAMILY } from './schema.js';
import { COLLABORATIVE } from './workflow.js';

export { GridBuildError, alternateIds, dataTypeValue, metadataEntries, propertyDefinition, propertyValue } from './build-fields.js';

export interface BuiltTransaction {
  familyName: string;
  familyVersion: string;
  inputs: string[];
  outputs: string[];
  payload: Uint8Array;
}

export interface BuildOptions {
  /** Unix seconds for payload `timestamp` / `created_at` defaults; default: now. */
  timestamp?: number;
  /** Public key used as the default revision `submitter`. */
  signer?: string;
}

/** A JSON action: `action` names it, the other fields are its snake_case arguments. */
export type GridActionInput = { action: string } & Record<string, unknown>;

/** Family version of plain transactions built here (also the Sabre contract version). */
export const GRID_FAMILY_VERSION = '2';
/** Sabre family version upstream's CLI uses. */
export const SABRE_FAMILY_VERSION = '0.5';

/** Input/output prefixes per family, as upstream's CLI declares them. */
export const FAMILY_PREFIXES: Record<string, { inputs: string[]; outputs: string[] }> = {
  [PIKE_FAMILY]: { inputs: [PIKE_PREFIX], outputs: [PIKE_PREFIX] },
  [SCHEMA_FAMILY]: { inputs: [PIKE_PREFIX, SCHEMA_PREFIX], outputs: [SCHEMA_PREFIX] },
  [PRODUCT_FAMILY]: { inputs: [PIKE_PREFIX, SCHEMA_PREFIX, PRODUCT_PREFIX], outputs: [PRODUCT_PREFIX] },
  [LOCATION_FAMILY]: { inputs: [SCHEMA_PREFIX, PIKE_PREFIX, LOCATION_PREFIX], outputs: [LOCATION_PREFIX] },
  [PURCHASE_ORDER_FAMILY]: { inputs: [PO_PREFIX, PIKE_PREFIX], outputs: [PO_PREFIX] },
};

// ------------------------------------------------------------------ families

function plain(family: string, type: typeof G.PikePayload, payload: Obj): BuiltTransaction {
  const prefixes = FAMILY_PREFIXES[family] as { inputs: string[]; outputs: string[] };
  return {
    familyName: family,
    familyVersion: GRID_FAMILY_VERSION,
    inputs: [...prefixes.inputs],
    outputs: [...prefixes.outputs],
    payload: encodeMsg(type, payload),
  };
}

function pike(a: GridActionInput, now: number): BuiltTransaction {
  const agent = (): Obj => ({
    orgId: str(a, 'org_id', true),
    publicKey: str(a, 'public_key', true),
    active: bool(a, 'active', true),
    roles: strings(a, 'roles'),
    metadata: metadataEntries(a.metadata),
  });
  const role = (): Obj => ({
    orgId: str(a, 'org_id', true),
    name: str(a, 'name', true),
    description: str(a, 'description'),
    permissions: strings(a, 'permissions'),
    allowedOrganizations: strings(a, 'allowed_organizations'),
    inheritFrom: strings(a, 'inherit_from'),
    active: bool(a, 'active', true),
  });
  // The organization id may come as `org_id` (upstream) or `id` (the data API's records).
  const orgId = (): string => (a.org_id !== undefined ? str(a, 'org_id', true) : str(a, 'id', true));
  const payload: Obj = { timestamp: now };
  switch (a.action) {
    case 'create_organization':
      payload.action = PikeAction.CREATE_ORGANIZATION;
      payload.createOrganization = {
        id: orgId(),
        name: str(a, 'name', true),
        alternateIds: alternateIds(a.alternate_ids),
        metadata: metadataEntries(a.metadata),
      };
      break;
    case 'update_organization':
      payload.action = PikeAction.UPDATE_ORGANIZATION;
      payload.updateOrganization = {
        id: orgId(),
        name: str(a, 'name'),
        locations: strings(a, 'locations'),
        alternateIds: alternateIds(a.alternate_ids),
        metadata: metadataEntries(a.metadata),
      };
      break;
    case 'create_agent':
      payload.action = PikeAction.CREATE_AGENT;
      payload.createAgent = agent();
      break;
    case 'update_agent':
      payload.action = PikeAction.UPDATE_AGENT;
      payload.updateAgent = agent();
      break;
    case 'create_role':
      payload.action = PikeAction.CREATE_ROLE;
      payload.createRole = role();
      break;
    case 'update_role':
      payload.action = PikeAction.UPDATE_ROLE;
      payload.updateRole = role();
      break;
    default:
      payload.action = PikeAction.DELETE_ROLE;
      payload.deleteRole = { orgId: str(a, 'org_id', true), name: str(a, 'name', true) };
  }
  return plain(PIKE_FAMILY, G.PikePayload, payload);
}

function schema(a: GridActionInput): BuiltTransaction {
  const name = a.schema_name !== undefined ? str(a, 'schema_name', true) : str(a, 'name', true);
  const properties = list(a, 'properties').map(propertyDefinition);
  if (properties.length === 0) fail('`properties` must not be empty');
  const payload: Obj =
    a.action === 'create_schema'
      ? {
          action: SchemaAction.SCHEMA_CREATE,
          schemaCreate: { schemaName: name, description: str(a, 'description'), owner: str(a, 'owner'), properties },
        }
      : { action: SchemaAction.SCHEMA_UPDATE, schemaUpdate: { schemaName: name, owner: str(a, 'owner'), properties } };
  return plain(SCHEMA_FAMILY, G.SchemaPayload, payload);
}

function product(a: GridActionInput, now: number): BuiltTransaction {
  const ns = namespaceValue(a, 'product_namespace', ProductNamespace.GS1);
  const id = str(a, 'product_id', true);
  const timestamp = uint(a, 'timestamp', now);
  const payload: Obj =
    a.action === 'create_product'
      ? {
          action: ProductAction.PRODUCT_CREATE,
          timestamp,
          productCreate: {
            productNamespace: ns,
            productId: id,
            owner: str(a, 'owner', true),
            properties: list(a, 'properties').map(propertyValue),
          },
        }
      : a.action === 'update_product'
        ? {
            action: ProductAction.PRODUCT_UPDATE,
            timestamp,
            productUpdate: { productNamespace: ns, productId: id, properties: list(a, 'properties').map(propertyValue) },
          }
        : { action: ProductAction.PRODUCT_DELETE, timestamp, productDelete: { productNamespace: ns, productId: id } };
  return plain(PRODUCT_FAMILY, G.ProductPayload, payload);
}

function location(a: GridActionInput, now: number): BuiltTransaction {
  const ns = namespaceValue(a, a.location_namespace !== undefined ? 'location_namespace' : 'namespace', LocationNamespace.GS1);
  const id = str(a, 'location_id', true);
  const timestamp = uint(a, 'timestamp', now);
  const payload: Obj =
    a.action === 'create_location'
      ? {
          action: LocationAction.LOCATION_CREATE,
          timestamp,
          locationCreate: {
            namespace: ns,
            locationId: id,
            owner: str(a, 'owner', true),
            properties: list(a, 'properties').map(propertyValue),
          },
        }
      : a.action === 'update_location'
        ? {
            action: LocationAction.LOCATION_UPDATE,
            timestamp,
            locationUpdate: { namespace: ns, locationId: id, properties: list(a, 'properties').map(propertyValue) },
          }
        : { action: LocationAction.LOCATION_DELETE, timestamp, locationDelete: { namespace: ns, locationId: id } };
  return plain(LOCATION_FAMILY, G.LocationPayload, payload);
}

function revision(v: unknown, now: number, opts: BuildOptions, dfltId: number): Obj {
  if (!isObj(v)) fail('`revision` is required');
  const id = v.revision_number !== undefined ? uint(v, 'revision_number', dfltId) : uint(v, 'revision_id', dfltId);
  const submitter = v.submitter !== undefined ? str(v, 'submitter', true) : (opts.signer ?? '');
  if (submitter === '') fail('`submitter` is required');
  return {
    revisionId: id,
    submitter,
    createdAt: uint(v, 'created_at', now),
    orderXmlV3_4: str(v, 'order_xml_v3_4', true),
  };
}

/** `create` (the spec's name for the start state) or no state: enter the first state. */
function entryState(o: Obj, draftState: string, normalState: string, draft: boolean): string {
  const s = str(o, 'workflow_state');
  if (s === '' || s === 'create') return draft ? draftState : normalState;
  return s;
}

function createVersionPayload(v: Obj, uid: string, now: number, opts: BuildOptions): Obj {
  const isDraft = bool(v, 'is_draft', false);
  return {
    versionId: str(v, 'version_id', true),
    poUid: v.po_uid !== undefined ? str(v, 'po_uid', true) : uid,
    isDraft,
    workflowState: entryState(v, 'editable', 'proposed', isDraft),
    revision: revision(v.revision, now, opts, 1),
  };
}

function updateVersionPayload(v: Obj, uid: string, now: number, opts: BuildOptions): Obj {
  return {
    versionId: str(v, 'version_id', true),
    poUid: v.po_uid !== undefined ? str(v, 'po_uid', true) : uid,
    workflowState: str(v, 'workflow_state', true),
    isDraft: bool(v, 'is_draft', false),
    // The contract numbers new revisions itself; 1 is only a placeholder > 0.
    revision: revision(v.revision, now, opts, 1),
  };
}

function poAlternateIds(v: unknown, uid: string): Obj[] {
  return alternateIds(v).map((a) => ({ idType: a.idType, id: a.id, poUid: uid }));
}

function purchaseOrder(a: GridActionInput, now: number, opts: BuildOptions): BuiltTransaction {
  const uid = (): string => (a.po_uid !== undefined ? str(a, 'po_uid', true) : str(a, 'uid', true));
  const payload: Obj = { timestamp: uint(a, 'timestamp', now) };
  switch (a.action) {
    case 'create_po': {
      const id = uid();
      const v = a.create_version_payload;
      payload.action = PurchaseOrderAction.CREATE_PO;
      payload.createPoPayload = {
        uid: id,
        createdAt: uint(a, 'created_at', now),
        buyerOrgId: str(a, 'buyer_org_id', true),
        sellerOrgId: str(a, 'seller_org_id', true),
        workflowState: entryState(a, 'issued', 'issued', false),
        alternateIds: poAlternateIds(a.alternate_ids, id),
        workflowId: a.workflow_id !== undefined ? str(a, 'workflow_id', true) : COLLABORATIVE,
        ...(v !== undefined && v !== null
          ? { createVersionPayload: createVersionPayload(isObj(v) ? v : fail('`create_version_payload` must be an object'), id, now, opts) }
          : {}),
      };
      break;
    }
    case 'update_po': {
      const id = uid();
      payload.action = PurchaseOrderAction.UPDATE_PO;
      payload.updatePoPayload = {
        poUid: id,
        workflowState: str(a, 'workflow_state', true),
        isClosed: bool(a, 'is_closed', false),
        acceptedVersionNumber: str(a, 'accepted_version_number'),
        alternateIds: poAlternateIds(a.alternate_ids, id),
        versionUpdates: list(a, 'version_updates').map((v) =>
          updateVersionPayload(isObj(v) ? v : fail('version updates must be objects'), id, now, opts),
        ),
      };
      break;
    }
    case 'create_version':
      payload.action = PurchaseOrderAction.CREATE_VERSION;
      payload.createVersionPayload = createVersionPayload(a, uid(), now, opts);
      break;
    default:
      payload.action = PurchaseOrderAction.UPDATE_VERSION;
      payload.updateVersionPayload = updateVersionPayload(a, uid(), now, opts);
  }
  return plain(PURCHASE_ORDER_FAMILY, G.PurchaseOrderPayload, payload);
}

const ACTIONS: Record<string, 'pike' | 'schema' | 'product' | 'location' | 'po'> = {
  create_organization: 'pike',
  update_organization: 'pike',
  create_agent: 'pike',
  update_agent: 'pike',
  create_role: 'pike',
  update_role: 'pike',
  delete_role: 'pike',
  create_schema: 'schema',
  update_schema: 'schema',
  create_product: 'product',
  update_product: 'product',
  delete_product: 'product',
  create_location: 'location',
  update_location: 'location',
  delete_location: 'location',
  create_po: 'po',
  update_po: 'po',
  create_version: 'po',
  update_version: 'po',
};

/** The action names buildGridTransaction understands. */
export const GRID_ACTIONS: readonly string[] = Object.keys(ACTIONS);

/**
 * Builds the plain family transaction for one JSON action (see GRID_ACTIONS; fields are
 * snake_case as in the data API's records).
 */
export function buildGridTransaction(action: GridActionInput, opts: BuildOptions = {}): BuiltTransaction {
  if (!isObj(action) || typeof action.action !== 'string') fail('`action` is required');
  const kind = ACTIONS[action.action];
  if (kind === undefined) fail(`unknown action: ${action.action}`);
  const now = opts.timestamp ?? Math.floor(Date.now() / 1000);
  switch (kind) {
    case 'pike':
      return pike(action, now);
    case 'schema':
      return schema(action);
    case 'product':
      return product(action, now);
    case 'location':
      return location(action, now);
    default:
      return purchaseOrder(action, now, opts);
  }
}

/**
 * Wraps a plain family transaction the way upstream clients do: a Sabre
 * ExecuteContractAction, with Sabre's registry addresses added to inputs and outputs.
 */
export function wrapInSabre(tx: BuiltTransaction): BuiltTransaction {
  const name = tx.familyName;
  const version = tx.familyVersion;
  const addresses = (prefixes: string[]): string[] => [
    sabreContractRegistryAddress(name),
    sabreContractAddress(name, version),
    ...prefixes.map(sabreNamespaceRegistryAddress),
    ...prefixes,
  ];
  const payload = encodeMsg(G.SabrePayload, {
    action: SabreAction.EXECUTE_CONTRACT,
    executeContract: { name, version, inputs: tx.inputs, outputs: tx.outputs, payload: tx.payload },
  });
  return {
    familyName: SABRE_FAMILY,
    familyVersion: SABRE_FAMILY_VERSION,
    inputs: addresses(tx.inputs),
    outputs: addresses(tx.outputs),
    payload,
  };
}
