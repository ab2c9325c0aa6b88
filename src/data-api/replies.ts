/**
 * Reply schemas of the data API (compiled by fast-json-stringify when the routes are
 * mounted). Records list their fields in the spec's order plus `service_id`; members
 * whose content is open-ended (metadata, property values and definitions, alternate ids,
 * role objects inside an agent) are written with JSON.stringify (schema `{}`), and every
 * record keeps `additionalProperties: true`, so a field the read model adds later is
 * still answered.
 */
import type { ReplySchema } from '../http/route.js';

const str = { type: 'string' } as const;
const strs = { type: 'array', items: str } as const;
const int = { type: 'integer' } as const;
const bool = { type: 'boolean' } as const;
const open = {} as const;
const obj = (properties: Record<string, unknown>): ReplySchema => ({ type: 'object', properties });
const record = (properties: Record<string, unknown>): ReplySchema => ({
  type: 'object',
  properties: { ...properties, service_id: str },
  additionalProperties: true,
});

const paging = obj({ current: str, offset: int, limit: int, total: int, first: str, prev: str, next: str, last: str });
const page = (items: unknown): ReplySchema => obj({ data: { type: 'array', items }, paging });

const organization = record({ id: str, name: str, alternate_ids: open, locations: strs, metadata: open, last_updated: int });
const agent = record({ public_key: str, org_id: str, active: bool, roles: open, metadata: open, last_updated: int });
const role = record({
  name: str,
  org_id: str,
  description: str,
  active: bool,
  permissions: strs,
  allowed_organizations: strs,
  inherit_from: strs,
  last_updated: int,
});
const schema = record({ name: str, description: str, owner: str, properties: open, last_updated: int });
const product = record({ product_id: str, product_address: str, product_namespace: str, owner: str, properties: open, last_updated: int });
const location = record({ location_id: str, location_namespace: str, owner: str, properties: open, last_updated: int });
const revision = record({ revision_number: int, submitter: str, created_at: open, order_xml_v3_4: str });
const version = record({
  version_id: str,
  workflow_state: str,
  is_draft: bool,
  current_revision_number: int,
  revisions: { type: 'array', items: int },
});
const purchaseOrder = record({
  uid: str,
  workflow_state: str,
  buyer_org_id: str,
  seller_org_id: str,
  is_closed: bool,
  accepted_version_number: str,
  alternate_ids: strs,
  versions: { type: 'array', items: version },
  created_at: open,
  workflow_id: str,
});

const invalidTxn = obj({ id: str, message: str, extended_data: str });
const status = obj({ batch_id: str, event_id: str, status: str, invalid_transactions: { type: 'array', items: invalidTxn } });

export const dataReplies = {
  /** A mutation: the batch link, with the outcome when the request waited. */
  submitted: obj({ link: obj({ batch_id: str, event_id: str }), status: str, invalid_transactions: { type: 'array', items: invalidTxn } }),
  statuses: obj({ data: { type: 'array', items: status }, link: str }),
  organizations: page(organization),
  organization,
  agents: page(agent),
  agent,
  roles: page(role),
  role,
  schemas: page(schema),
  schema,
  products: page(product),
  product,
  locations: page(location),
  location,
  purchaseOrders: page(purchaseOrder),
  purchaseOrder,
  versions: page(version),
  revisions: page(revision),
  revision,
} satisfies Record<string, ReplySchema>;
