/**
 * Locations: GS1 locations keyed by GLN, owned by a Pike organization whose GS1 company
 * prefix appears in the GLN, with properties checked against the `gs1_location` schema.
 */
import type { Family, TxnContext, TxnInfo } from '../types.js';
import { GRID_NAMESPACE, locationAddress } from './addressing.js';
import {
  G,
  LocationAction,
  LocationNamespace,
  decodeMsg,
  findIn,
  invalid,
  removeFrom,
  upsertIn,
  type ListSpec,
  type LocationMsg,
  type OrganizationMsg,
  type PropertyValueMsg,
} from './common.js';
import { validateGln } from './gs1.js';
import { checkPermission, getOrganization } from './pike-state.js';
import { GS1_COMPANY_PREFIX } from './product.js';
import { getSchema, validateProperties } from './schema.js';

export const LOCATION_FAMILY = 'grid_location';
export const GS1_LOCATION_SCHEMA = 'gs1_location';

export const LOCATIONS: ListSpec<LocationMsg> = { type: G.LocationList, field: 'entries', key: (l) => l.locationId };

interface LocationActionMsg {
  namespace: number;
  locationId: string;
  owner?: string;
  properties?: PropertyValueMsg[];
}
interface LocationPayloadMsg {
  action: number;
  locationCreate?: LocationActionMsg | null;
  locationUpdate?: LocationActionMsg | null;
  locationDelete?: LocationActionMsg | null;
}

const EMPTY: LocationActionMsg = { namespace: LocationNamespace.UNSET_TYPE, locationId: '', owner: '', properties: [] };

function getLocation(ctx: TxnContext, id: string): LocationMsg | undefined {
  return findIn(ctx, LOCATIONS, locationAddress(id), id);
}

/**
 * Only GS1 locations have an address scheme, so any other namespace is refused (upstream
 * would compute a GS1 address regardless).
 */
function checkNamespace(ns: number): void {
  if (ns !== LocationNamespace.GS1) invalid('Invalid location namespace enum for location');
}

function ownerOrg(ctx: TxnContext, owner: string): OrganizationMsg {
  const org = getOrganization(ctx, owner);
  if (org === undefined) invalid(`Organization ${owner} is not registered with Pike`);
  return org;
}

function checkSchema(ctx: TxnContext, properties: PropertyValueMsg[]): void {
  const schema = getSchema(ctx, GS1_LOCATION_SCHEMA);
  if (schema === undefined) invalid(`${GS1_LOCATION_SCHEMA} schema has not been defined`);
  validateProperties(schema, properties, 'gs1');
}

function createLocation(p: LocationActionMsg, signer: string, ctx: TxnContext): void {
  const owner = p.owner ?? '';
  const properties = p.properties ?? [];
  checkNamespace(p.namespace);
  validateGln(p.locationId);
  if (getLocation(ctx, p.locationId) !== undefined) invalid(`A location with GLN ${p.locationId} already exists`);
  const org = ownerOrg(ctx, owner);
  checkPermission(ctx, signer, 'location::can-create-location', owner);
  const hasPrefix = org.alternateIds.some((a) => a.idType === GS1_COMPANY_PREFIX && p.locationId.includes(a.id));
  if (!hasPrefix) invalid(`Organization ${owner} does not have the correct gs1 prefix`);
  checkSchema(ctx, properties);
  upsertIn(ctx, LOCATIONS, locationAddress(p.locationId), {
    locationId: p.locationId,
    namespace: p.namespace,
    owner,
    properties,
  });
}

function existing(ctx: TxnContext, id: string): LocationMsg {
  const location = getLocation(ctx, id);
  if (location === undefined) invalid(`A location with GLN ${id} does not exist`);
  return location;
}

function updateLocation(p: LocationActionMsg, signer: string, ctx: TxnContext): void {
  checkNamespace(p.namespace);
  const location = existing(ctx, p.locationId);
  ownerOrg(ctx, location.owner);
  checkPermission(ctx, signer, 'location::can-update-location', location.owner);
  const properties = p.properties ?? [];
  checkSchema(ctx, properties);
  location.properties = properties;
  upsertIn(ctx, LOCATIONS, locationAddress(p.locationId), location);
}

function deleteLocation(p: LocationActionMsg, signer: string, ctx: TxnContext): void {
  checkNamespace(p.namespace);
  const location = existing(ctx, p.locationId);
  ownerOrg(ctx, location.owner);
  checkPermission(ctx, signer, 'location::can-delete-location', location.owner);
  removeFrom(ctx, LOCATIONS, locationAddress(p.locationId), p.locationId);
}

export function applyLocation(payload: Uint8Array, signer: string, ctx: TxnContext): void {
  const p = decodeMsg<LocationPayloadMsg>(G.LocationPayload, payload, 'location payload');
  // The location contract does not check the payload timestamp.
  switch (p.action) {
    case LocationAction.LOCATION_CREATE:
      return createLocation(p.locationCreate ?? EMPTY, signer, ctx);
    case LocationAction.LOCATION_UPDATE:
      return updateLocation(p.locationUpdate ?? EMPTY, signer, ctx);
    case LocationAction.LOCATION_DELETE:
      return deleteLocation(p.locationDelete ?? EMPTY, signer, ctx);
    default:
      return invalid('Invalid action');
  }
}

export const locationFamily: Family = {
  name: LOCATION_FAMILY,
  versions: ['1', '2'],
  namespaces: [GRID_NAMESPACE],
  apply(txn: TxnInfo, ctx: TxnContext): void {
    applyLocation(txn.payload, txn.header.signerPublicKey, ctx);
  },
};
