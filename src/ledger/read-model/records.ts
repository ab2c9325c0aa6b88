/**
 * The data API's JSON records, as the projector stores them in the read model and the
 * routes serve them (snake_case fields, 64-bit integers as numbers when exact).
 */
import type { DATA_TYPE_NAMES } from '../../families/grid/common.js';

export type MetadataEntry = Record<string, string>;

export interface OrganizationRecord {
  id: string;
  name: string;
  alternate_ids: string[];
  locations: string[];
  metadata: MetadataEntry[];
  last_updated: number;
}
export interface AgentRecord {
  public_key: string;
  org_id: string;
  active: boolean;
  /** Role names; see agentRoleKey to read the Role records. */
  roles: string[];
  /** Upstream's shape: one object mapping keys to values (a later duplicate key wins). */
  metadata: Record<string, string>;
  last_updated: number;
}
export interface RoleRecord {
  name: string;
  org_id: string;
  description: string;
  active: boolean;
  permissions: string[];
  allowed_organizations: string[];
  inherit_from: string[];
  last_updated: number;
}
export interface AlternateIdRecord {
  id_type: string;
  id: string;
  org_id: string;
}
export type DataTypeName = (typeof DATA_TYPE_NAMES)[number];
export interface PropertyDefinitionRecord {
  name: string;
  data_type: DataTypeName;
  description: string;
  required: boolean;
  number_exponent: number;
  enum_options: string[];
  struct_properties: PropertyDefinitionRecord[];
  /** The `value` sent with the definition; left out when none was. */
  value?: unknown;
}
/**
 * `value` by data type: BYTES base64 string, BOOLEAN boolean, NUMBER integer (a decimal
 * string beyond 2^53), STRING string, ENUM option index, STRUCT PropertyValue[],
 * LAT_LONG {latitude, longitude} in millionths of a degree.
 */
export interface PropertyValueRecord {
  name: string;
  data_type: DataTypeName;
  value: unknown;
}
export interface SchemaRecord {
  name: string;
  description: string;
  owner: string;
  properties: PropertyDefinitionRecord[];
  last_updated: number;
}
export interface ProductRecord {
  product_id: string;
  product_address: string;
  product_namespace: string;
  owner: string;
  properties: PropertyValueRecord[];
  last_updated: number;
}
export interface LocationRecord {
  location_id: string;
  location_namespace: string;
  owner: string;
  properties: PropertyValueRecord[];
  last_updated: number;
}
export interface RevisionRecord {
  revision_number: number;
  submitter: string;
  created_at: number | string;
  order_xml_v3_4: string;
}
export interface VersionRecord {
  version_id: string;
  workflow_state: string;
  is_draft: boolean;
  current_revision_number: number;
  /** Revision numbers, ascending; the revisions are in grid.po_revision. */
  revisions: number[];
}
export interface PoAlternateIdRecord {
  id_type: string;
  id: string;
  po_uid: string;
}
export interface PurchaseOrderRecord {
  uid: string;
  workflow_state: string;
  buyer_org_id: string;
  seller_org_id: string;
  is_closed: boolean;
  /** Omitted when no version is accepted. */
  accepted_version_number?: string;
  alternate_ids: PoAlternateIdRecord[];
  versions: VersionRecord[];
  created_at: number | string;
  workflow_id: string;
}
