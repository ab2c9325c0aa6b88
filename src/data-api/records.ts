/**
 * Read-model records as the data API answers them. Records are stored in the spec's
 * shapes already; here `service_id` is added (only when the request named one: upstream
 * omits it for the node's own ledger), agent role names become Role objects, and
 * purchase-order alternate ids become `<id_type>:<id>` strings like organizations'.
 */
import { agentRoleKey, gridKeys } from '../ledger/read-model/keys.js';
import type { AgentRecord, PurchaseOrderRecord, RevisionRecord, VersionRecord } from '../ledger/read-model/records.js';
import type { DataBackend } from './backend.js';
import { bad } from './validate.js';
import { dataErrors } from './errors.js';

export function withService<T extends object>(be: DataBackend, rec: T): T & { service_id?: string } {
  return be.serviceId === undefined ? rec : { ...rec, service_id: be.serviceId };
}

/** A stored record as is (plus `service_id`). */
export const plainJson =
  (be: DataBackend) =>
  <T extends object>(rec: T): T & { service_id?: string } =>
    withService(be, rec);

/** Role JSON for an agent's role name; a name no role answers to keeps just name and org. */
function roleFor(be: DataBackend, agentOrg: string, name: string): object {
  const role = be.rm.get('role', agentRoleKey(agentOrg, name));
  if (role !== undefined) return withService(be, role);
  const dot = name.lastIndexOf('.');
  return dot < 0 ? { name, org_id: agentOrg } : { name: name.slice(dot + 1), org_id: name.slice(0, dot) };
}

export function agentJson(be: DataBackend, a: AgentRecord): object {
  return withService(be, {
    public_key: a.public_key,
    org_id: a.org_id,
    active: a.active,
    roles: a.roles.map((r) => roleFor(be, a.org_id, r)),
    metadata: a.metadata,
    last_updated: a.last_updated,
  });
}

export function revisionJson(be: DataBackend, r: RevisionRecord): object {
  return withService(be, { ...r });
}

export function versionJson(be: DataBackend, v: VersionRecord): object {
  return withService(be, { ...v });
}

export function purchaseOrderJson(be: DataBackend, po: PurchaseOrderRecord): object {
  return withService(be, {
    uid: po.uid,
    workflow_state: po.workflow_state,
    buyer_org_id: po.buyer_org_id,
    seller_org_id: po.seller_org_id,
    is_closed: po.is_closed,
    ...(po.accepted_version_number !== undefined ? { accepted_version_number: po.accepted_version_number } : {}),
    alternate_ids: po.alternate_ids.map((a) => `${a.id_type}:${a.id}`),
    versions: po.versions.map((v) => versionJson(be, v)),
    created_at: po.created_at,
    workflow_id: po.workflow_id,
  });
}

/** 404 unless the organization a path names exists. */
export function requireOrg(be: DataBackend, orgId: string): void {
  if (!be.rm.has('organization', gridKeys.organization(orgId))) throw dataErrors.organizationNotFound({ id: orgId });
}

/** 400 unless `orgId` names an organization of the read model. */
export function knownOrg(be: DataBackend, orgId: unknown, path: string): void {
  if (typeof orgId !== 'string' || orgId === '') return;
  if (!be.rm.has('organization', gridKeys.organization(orgId))) throw bad(`\`${path}\`: unknown organization ${orgId}`);
}

/** A `service_id` inside a body must be the one the request is served for. */
export function sameService(be: DataBackend, v: unknown, path: string): void {
  if (v !== undefined && v !== be.serviceId) {
    throw bad(`\`${path}\` (${String(v)}) does not match the request's service_id (${be.serviceId ?? 'none'})`);
  }
}
