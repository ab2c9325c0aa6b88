/**
 * Schemas: named, append-only lists of property definitions. Products and locations
 * validate their properties against the reserved schemas `gs1_product` / `gs1_location`.
 */
import type { Family, TxnContext, TxnInfo } from '../types.js';
import { GRID_NAMESPACE, schemaAddress } from './addressing.js';
import {
  DATA_TYPE_DEBUG_NAMES,
  DataType,
  SchemaAction,
  G,
  compareUtf8,
  decodeMsg,
  findIn,
  checkId,
  invalid,
  upsertIn,
  type ListSpec,
  type PropertyDefinitionMsg,
  type PropertyValueMsg,
  type SchemaMsg,
} from './common.js';
import { checkPermission, getAgent } from './pike-state.js';

export const SCHEMA_FAMILY = 'grid_schema';

export const SCHEMAS: ListSpec<SchemaMsg> = { type: G.SchemaList, field: 'schemas', key: (s) => s.name };

export function getSchema(ctx: TxnContext, name: string): SchemaMsg | undefined {
  return findIn(ctx, SCHEMAS, schemaAddress(name), name);
}

interface SchemaFields {
  schemaName: string;
  description?: string;
  owner: string;
  properties: PropertyDefinitionMsg[];
}
interface SchemaPayloadMsg {
  action: number;
  schemaCreate?: SchemaFields | null;
  schemaUpdate?: SchemaFields | null;
}

const EMPTY: SchemaFields = { schemaName: '', description: '', owner: '', properties: [] };

/** Definitions must name a data type; the protobuf decoders upstream refuse an unset one. */
function checkDefinitions(defs: PropertyDefinitionMsg[]): void {
  for (const d of defs) {
    if (d.dataType === DataType.UNSET_DATA_TYPE || DATA_TYPE_DEBUG_NAMES[d.dataType] === undefined) {
      invalid(`Invalid data type for property definition ${d.name}`);
    }
    checkDefinitions(d.structProperties);
  }
}

function checkCommon(p: SchemaFields): void {
  if (p.schemaName === '') invalid('Schema name must be set');
  if (p.properties.length === 0) invalid('Properties must not be empty');
  checkDefinitions(p.properties);
}

function createSchema(p: SchemaFields, signer: string, ctx: TxnContext): void {
  checkCommon(p);
  checkId(p.schemaName, 'Schema name');
  if (getSchema(ctx, p.schemaName) !== undefined) invalid(`Schema with name ${p.schemaName} already exists`);
  const agent = getAgent(ctx, signer);
  if (agent === undefined) invalid(`The signer is not an Agent: ${signer}`);
  // Checked in the organization that will own the schema (the signer's own when none is
  // named). Upstream checks the signer's organization and stores any owner, so an agent
  // could create schemas in another organization's name.
  checkPermission(ctx, signer, 'schema::can-create-schema', p.owner === '' ? agent.orgId : p.owner);
  upsertIn(ctx, SCHEMAS, schemaAddress(p.schemaName), {
    name: p.schemaName,
    description: p.description ?? '',
    owner: p.owner,
    properties: p.properties,
  });
}

function updateSchema(p: SchemaFields, signer: string, ctx: TxnContext): void {
  checkCommon(p);
  const schema = getSchema(ctx, p.schemaName);
  if (schema === undefined) invalid(`Schema with name ${p.schemaName} does not exist`);
  const agent = getAgent(ctx, signer);
  if (agent === undefined || !agent.active) invalid(`The signer is not an active Agent: ${signer}`);
  checkPermission(ctx, signer, 'schema::can-update-schema', schema.owner);
  // Append-only: existing definitions stay (sorted by name), new names are appended.
  const existing = [...schema.properties].sort((a, b) => compareUtf8(a.name, b.name));
  for (const def of p.properties) {
    if (existing.some((e) => e.name === def.name)) {
      invalid(`Schema already has PropertyDefinition with name ${def.name}`);
    }
    existing.push(def);
  }
  schema.properties = existing;
  upsertIn(ctx, SCHEMAS, schemaAddress(p.schemaName), schema);
}

export function applySchema(payload: Uint8Array, signer: string, ctx: TxnContext): void {
  const p = decodeMsg<SchemaPayloadMsg>(G.SchemaPayload, payload, 'schema payload');
  switch (p.action) {
    case SchemaAction.SCHEMA_CREATE:
      return createSchema(p.schemaCreate ?? EMPTY, signer, ctx);
    case SchemaAction.SCHEMA_UPDATE:
      return updateSchema(p.schemaUpdate ?? EMPTY, signer, ctx);
    default:
      return invalid('Invalid action');
  }
}

/**
 * The checks the product and location contracts run against their GS1 schema: every
 * value names a top-level definition, and every required definition has a value of the
 * same name and data type. (Optional values' types are not checked upstream either.)
 */
export function validateProperties(schema: SchemaMsg, values: PropertyValueMsg[], label: string): void {
  for (const v of values) {
    if (!schema.properties.some((d) => d.name === v.name)) {
      invalid(`${v.name} is not a property that is defined by the ${label} schema`);
    }
  }
  for (const d of schema.properties) {
    if (!d.required) continue;
    if (!values.some((v) => v.name === d.name && v.dataType === d.dataType)) {
      const typeName = DATA_TYPE_DEBUG_NAMES[d.dataType] ?? String(d.dataType);
      invalid(`Missing required field '${d.name}' of type '${typeName}'`);
    }
  }
}

export const schemaFamily: Family = {
  name: SCHEMA_FAMILY,
  versions: ['1', '2'],
  namespaces: [GRID_NAMESPACE],
  apply(txn: TxnInfo, ctx: TxnContext): void {
    applySchema(txn.payload, txn.header.signerPublicKey, ctx);
  },
};
