/**
 * Shared plumbing of the supply-chain families: the protobuf types of grid.proto, plain
 * TypeScript shapes of the decoded messages, and small deterministic helpers (hashing,
 * byte-order string comparison, 64-bit integer conversion, list-at-address storage).
 */
import { createHash } from 'node:crypto';
import type protobuf from 'protobufjs';
import { decode, loadProto, messageType, protoEnum, type MessageType } from '../../proto/index.js';
import { InvalidTransaction, type TxnContext } from '../types.js';

const root = loadProto('grid.proto');
/** A message type, tagged with its decoded shape when one is given (decode() infers it). */
function t(name: string): protobuf.Type;
function t<T>(name: string): MessageType<T>;
function t<T>(name: string): MessageType<T> {
  return messageType<T>(root, `cairn.grid.${name}`);
}

/** Every message type of grid.proto, by name. */
export const G = {
  KeyValueEntry: t('KeyValueEntry'),
  AlternateId: t('AlternateId'),
  Agent: t('Agent'),
  AgentList: t<{ agents: AgentMsg[] }>('AgentList'),
  Organization: t('Organization'),
  OrganizationList: t<{ organizations: OrganizationMsg[] }>('OrganizationList'),
  Role: t('Role'),
  RoleList: t<{ roles: RoleMsg[] }>('RoleList'),
  AlternateIdIndexEntry: t('AlternateIdIndexEntry'),
  AlternateIdIndexEntryList: t<{ entries: AlternateIdIndexEntryMsg[] }>('AlternateIdIndexEntryList'),
  PikePayload: t('PikePayload'),
  PropertyDefinition: t('PropertyDefinition'),
  PropertyValue: t('PropertyValue'),
  Schema: t('Schema'),
  SchemaList: t<{ schemas: SchemaMsg[] }>('SchemaList'),
  SchemaPayload: t('SchemaPayload'),
  Product: t('Product'),
  ProductList: t<{ entries: ProductMsg[] }>('ProductList'),
  ProductPayload: t('ProductPayload'),
  Location: t('Location'),
  LocationList: t<{ entries: LocationMsg[] }>('LocationList'),
  LocationPayload: t('LocationPayload'),
  PurchaseOrder: t('PurchaseOrder'),
  PurchaseOrderList: t<{ purchaseOrders: PurchaseOrderMsg[] }>('PurchaseOrderList'),
  PurchaseOrderPayload: t('PurchaseOrderPayload'),
  SabrePayload: t('SabrePayload'),
  ExecuteContractAction: t('ExecuteContractAction'),
} as const;

/** protobufjs decodes 64-bit integers as Long objects (the `long` package is installed). */
export interface LongLike {
  low: number;
  high: number;
  unsigned: boolean;
  toNumber(): number;
  toString(): string;
}
export type Int64 = number | LongLike;

export interface KeyValueEntryMsg {
  key: string;
  value: string;
}
export interface AlternateIdMsg {
  idType: string;
  id: string;
}
export interface AgentMsg {
  orgId: string;
  publicKey: string;
  active: boolean;
  roles: string[];
  metadata: KeyValueEntryMsg[];
}
export interface OrganizationMsg {
  orgId: string;
  name: string;
  locations: string[];
  alternateIds: AlternateIdMsg[];
  metadata: KeyValueEntryMsg[];
}
export interface RoleMsg {
  orgId: string;
  name: string;
  description: string;
  active: boolean;
  permissions: string[];
  allowedOrganizations: string[];
  inheritFrom: string[];
}
export interface AlternateIdIndexEntryMsg {
  idType: string;
  id: string;
  gridIdentityId: string;
}
export interface PropertyDefinitionMsg {
  name: string;
  dataType: number;
  required: boolean;
  description: string;
  numberExponent: number;
  enumOptions: string[];
  structProperties: PropertyDefinitionMsg[];
  /** JSON text of the definition's `value`, "" when none was given. */
  valueJson: string;
}
export interface LatLongMsg {
  latitude: Int64;
  longitude: Int64;
}
export interface PropertyValueMsg {
  name: string;
  dataType: number;
  bytesValue: Uint8Array;
  booleanValue: boolean;
  numberValue: Int64;
  stringValue: string;
  enumValue: number;
  structValues: PropertyValueMsg[];
  latLongValue?: LatLongMsg | null;
}
export interface SchemaMsg {
  name: string;
  description: string;
  owner: string;
  properties: PropertyDefinitionMsg[];
}
export interface ProductMsg {
  productId: string;
  productNamespace: number;
  owner: string;
  properties: PropertyValueMsg[];
}
export interface LocationMsg {
  locationId: string;
  namespace: number;
  owner: string;
  properties: PropertyValueMsg[];
}
export interface PurchaseOrderRevisionMsg {
  revisionId: Int64;
  submitter: string;
  createdAt: Int64;
  orderXmlV3_4: string;
}
export interface PurchaseOrderVersionMsg {
  versionId: string;
  workflowState: string;
  isDraft: boolean;
  currentRevisionId: Int64;
  revisions: PurchaseOrderRevisionMsg[];
}
export interface PurchaseOrderAlternateIdMsg {
  idType: string;
  id: string;
  poUid: string;
}
export interface PurchaseOrderMsg {
  uid: string;
  workflowState: string;
  buyerOrgId: string;
  sellerOrgId: string;
  versions: PurchaseOrderVersionMsg[];
  acceptedVersionNumber: string;
  alternateIds: PurchaseOrderAlternateIdMsg[];
  createdAt: Int64;
  isClosed: boolean;
  workflowId: string;
}

/** PropertyDefinition.DataType names, in value order (NAMES[value] is the name). */
export const DATA_TYPE_NAMES = ['UNSET_DATA_TYPE', 'BYTES', 'BOOLEAN', 'NUMBER', 'STRING', 'ENUM', 'STRUCT', 'LAT_LONG'] as const;

/** PropertyDefinition.DataType values by name. */
export const DataType = protoEnum(root, 'cairn.grid.PropertyDefinition.DataType', DATA_TYPE_NAMES);
DATA_TYPE_NAMES.forEach((name, i) => {
  if (DataType[name] !== i) throw new Error(`DataType ${name} is ${DataType[name]}, not ${i}`);
});

/** The names upstream's contracts print in messages (Rust debug names: `String`, `LatLong`). */
export const DATA_TYPE_DEBUG_NAMES = ['UnsetDataType', 'Bytes', 'Boolean', 'Number', 'String', 'Enum', 'Struct', 'LatLong'] as const;

/** Product.ProductNamespace and LocationNamespace: both GS1 only. */
export const ProductNamespace = protoEnum(root, 'cairn.grid.Product.ProductNamespace', ['UNSET_TYPE', 'GS1']);
export const LocationNamespace = protoEnum(root, 'cairn.grid.LocationNamespace', ['UNSET_TYPE', 'GS1']);

/** The payloads' Action enums. */
export const PikeAction = protoEnum(root, 'cairn.grid.PikePayload.Action', [
  'ACTION_UNSET',
  'CREATE_AGENT',
  'UPDATE_AGENT',
  'CREATE_ORGANIZATION',
  'UPDATE_ORGANIZATION',
  'CREATE_ROLE',
  'UPDATE_ROLE',
  'DELETE_ROLE',
  'DELETE_AGENT',
  'DELETE_ORGANIZATION',
]);
export const SchemaAction = protoEnum(root, 'cairn.grid.SchemaPayload.Action', ['UNSET_ACTION', 'SCHEMA_CREATE', 'SCHEMA_UPDATE']);
export const ProductAction = protoEnum(root, 'cairn.grid.ProductPayload.Action', [
  'UNSET_ACTION',
  'PRODUCT_CREATE',
  'PRODUCT_UPDATE',
  'PRODUCT_DELETE',
]);
export const LocationAction = protoEnum(root, 'cairn.grid.LocationPayload.Action', [
  'UNSET_ACTION',
  'LOCATION_CREATE',
  'LOCATION_UPDATE',
  'LOCATION_DELETE',
]);
export const PurchaseOrderAction = protoEnum(root, 'cairn.grid.PurchaseOrderPayload.Action', [
  'UNSET_ACTION',
  'CREATE_PO',
  'UPDATE_PO',
  'CREATE_VERSION',
  'UPDATE_VERSION',
]);
export const SabreAction = protoEnum(root, 'cairn.grid.SabrePayload.Action', ['ACTION_UNSET', 'EXECUTE_CONTRACT']);

export function sha512Hex(s: string): string {
  return createHash('sha512').update(s, 'utf8').digest('hex');
}

/** Orders strings by their UTF-8 bytes, as Rust's `String` ordering does. */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

export function toNum(v: Int64 | null | undefined): number {
  if (v === null || v === undefined) return 0;
  return typeof v === 'number' ? v : v.toNumber();
}

/** JSON-safe form of a 64-bit value: a number when exact, else its decimal string. */
export function toJsonInt(v: Int64 | null | undefined): number | string {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  const n = v.toNumber();
  return Number.isSafeInteger(n) ? n : v.toString();
}

export function invalid(message: string): never {
  throw new InvalidTransaction(message);
}

/** C0 and C1 control characters (and DEL): never part of a printable identifier. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Refuses an identifier holding a control character. Upstream leaves ids free-form; we
 * refuse these because ids become keys of the read model and parts of `<org>.<role>`
 * names, where an invisible character could pass for a separator.
 */
export function checkId(value: string, what: string): void {
  if (CONTROL_RE.test(value)) invalid(`${what} must not contain control characters: ${JSON.stringify(value)}`);
}

/** decode() that turns malformed bytes into an InvalidTransaction naming `what`. */
export function decodeMsg<T>(type: MessageType<T>, bytes: Uint8Array, what: string): T {
  try {
    return decode(type, bytes);
  } catch (err) {
    return invalid(`Cannot decode ${what}: ${(err as Error).message}`);
  }
}

export function encodeMsg(type: protobuf.Type, obj: object): Uint8Array {
  return type.encode(type.fromObject(obj)).finish();
}

/**
 * State entries hold a list message (to survive hash collisions) sorted by a key. This
 * describes one such list type: its message type, repeated field and the entry key.
 */
export interface ListSpec<T> {
  type: protobuf.Type;
  field: string;
  key(entry: T): string;
}

const ADDRESS_RE = /^[0-9a-f]{70}$/;

export function isAddress(address: string): boolean {
  return ADDRESS_RE.test(address);
}

/** Reads the list stored at an address; an address that cannot exist reads as empty. */
export function readList<T>(ctx: TxnContext, spec: ListSpec<T>, address: string): T[] {
  if (!isAddress(address)) return [];
  const bytes = ctx.get(address);
  if (bytes === undefined || bytes.length === 0) return [];
  const msg = decodeMsg<Record<string, T[]>>(spec.type, bytes, `state at ${address}`);
  return msg[spec.field] ?? [];
}

/** Writes a list back sorted by key; an empty list deletes the entry. */
export function writeList<T>(ctx: TxnContext, spec: ListSpec<T>, address: string, entries: T[]): void {
  if (!isAddress(address)) invalid(`Invalid state address: ${address}`);
  if (entries.length === 0) {
    ctx.delete(address);
    return;
  }
  const sorted = [...entries].sort((a, b) => compareUtf8(spec.key(a), spec.key(b)));
  ctx.set(address, encodeMsg(spec.type, { [spec.field]: sorted }));
}

export function findIn<T>(ctx: TxnContext, spec: ListSpec<T>, address: string, key: string): T | undefined {
  return readList(ctx, spec, address).find((e) => spec.key(e) === key);
}

/** Inserts or replaces the entry with the same key. */
export function upsertIn<T>(ctx: TxnContext, spec: ListSpec<T>, address: string, entry: T): void {
  const key = spec.key(entry);
  const rest = readList(ctx, spec, address).filter((e) => spec.key(e) !== key);
  rest.push(entry);
  writeList(ctx, spec, address, rest);
}

export function removeFrom<T>(ctx: TxnContext, spec: ListSpec<T>, address: string, key: string): void {
  const rest = readList(ctx, spec, address).filter((e) => spec.key(e) !== key);
  writeList(ctx, spec, address, rest);
}
