/**
 * Pike: organizations, agents and roles, the identity layer every other supply-chain
 * family checks permissions against.
 */
import type { Family, TxnContext, TxnInfo } from '../types.js';
import { GRID_NAMESPACE } from './addressing.js';
import { G, PikeAction, checkId, decodeMsg, invalid, type AgentMsg, type AlternateIdMsg, type KeyValueEntryMsg, type RoleMsg } from './common.js';
import {
  ADMIN_ROLE,
  PIKE_PERMISSIONS,
  checkAgentRoles,
  checkPermission,
  getAgent,
  getAlternateIdEntry,
  getOrganization,
  getRole,
  removeRole,
  setAgent,
  setAlternateIdEntry,
  setOrganization,
  setRole,
} from './pike-state.js';

export const PIKE_FAMILY = 'grid_pike';

interface AgentAction {
  orgId: string;
  publicKey: string;
  active: boolean;
  roles: string[];
  metadata: KeyValueEntryMsg[];
}
interface OrgAction {
  id: string;
  name: string;
  locations?: string[];
  alternateIds: AlternateIdMsg[];
  metadata: KeyValueEntryMsg[];
}
interface RoleAction {
  orgId: string;
  name: string;
  description: string;
  permissions: string[];
  allowedOrganizations: string[];
  inheritFrom: string[];
  active: boolean;
}
interface PikePayloadMsg {
  action: number;
  createAgent?: AgentAction | null;
  updateAgent?: AgentAction | null;
  createOrganization?: OrgAction | null;
  updateOrganization?: OrgAction | null;
  createRole?: RoleAction | null;
  updateRole?: RoleAction | null;
  deleteRole?: { orgId: string; name: string } | null;
}

const EMPTY_AGENT: AgentAction = { orgId: '', publicKey: '', active: false, roles: [], metadata: [] };
const EMPTY_ORG: OrgAction = { id: '', name: '', locations: [], alternateIds: [], metadata: [] };
const EMPTY_ROLE: RoleAction = {
  orgId: '',
  name: '',
  description: '',
  permissions: [],
  allowedOrganizations: [],
  inheritFrom: [],
  active: false,
};

const NOT_AN_AGENT = (key: string): string => `The signer is not an Agent: ${key}`;
const ADMIN_RESERVED = "Role name 'admin' is reserved for the Pike administrator and cannot be overwritten";
const ROLE_DOT =
  "Role name is not properly formatted. Roles may not contain the '.' character. This is used to " + 'reference roles from outside organizations';

function createOrganization(p: OrgAction, signer: string, ctx: TxnContext): void {
  if (p.id === '') invalid('Unique organization ID required');
  if (p.name === '') invalid('organization name required');
  checkId(p.id, 'Organization ID');
  if (getOrganization(ctx, p.id) !== undefined) invalid(`Organization already exists: ${p.id}`);
  setOrganization(ctx, {
    orgId: p.id,
    name: p.name,
    locations: [],
    alternateIds: p.alternateIds,
    metadata: p.metadata,
  });
  setRole(ctx, {
    orgId: p.id,
    name: ADMIN_ROLE,
    description: 'The Pike administrator',
    active: true,
    permissions: [
      PIKE_PERMISSIONS.createAgents,
      PIKE_PERMISSIONS.updateAgents,
      PIKE_PERMISSIONS.deleteAgents,
      PIKE_PERMISSIONS.updateOrganization,
      PIKE_PERMISSIONS.createRoles,
      PIKE_PERMISSIONS.updateRoles,
      PIKE_PERMISSIONS.deleteRoles,
    ],
    allowedOrganizations: [],
    inheritFrom: [],
  });
  indexAlternateIds(ctx, p.id, p.alternateIds);
  if (getAgent(ctx, signer) !== undefined) invalid(`Agent already exists: ${signer}`);
  setAgent(ctx, { orgId: p.id, publicKey: signer, active: true, roles: [ADMIN_ROLE], metadata: [] });
}

/** Claims `<id_type>:<id>` for the org; another org's claim is an error. */
function indexAlternateIds(ctx: TxnContext, orgId: string, ids: AlternateIdMsg[]): void {
  for (const alt of ids) {
    checkId(alt.idType, 'Alternate ID type');
    checkId(alt.id, 'Alternate ID');
    const existing = getAlternateIdEntry(ctx, alt.idType, alt.id);
    if (existing !== undefined && existing.gridIdentityId !== orgId) {
      invalid(`Alternate ID index entry already exists: ${alt.idType}:${alt.id}`);
    }
    setAlternateIdEntry(ctx, { idType: alt.idType, id: alt.id, gridIdentityId: orgId });
  }
}

function updateOrganization(p: OrgAction, signer: string, ctx: TxnContext): void {
  if (p.id === '') invalid('Unique organization ID required');
  checkPermission(ctx, signer, PIKE_PERMISSIONS.updateOrganization, p.id);
  indexAlternateIds(ctx, p.id, p.alternateIds);
  const org = getOrganization(ctx, p.id);
  if (org === undefined) invalid(`Organization does not exist: ${p.id}`);
  // Each field replaces the stored one only when given (fields cannot be cleared).
  if (p.name !== '') org.name = p.name;
  if (p.locations !== undefined && p.locations.length > 0) org.locations = p.locations;
  if (p.metadata.length > 0) org.metadata = p.metadata;
  if (p.alternateIds.length > 0) org.alternateIds = p.alternateIds;
  setOrganization(ctx, org);
}

function checkAgentFields(p: AgentAction): void {
  if (p.publicKey === '') invalid('Public key required');
  if (p.orgId === '') invalid('Organization ID required');
  checkId(p.publicKey, 'Public key');
}

function createAgent(p: AgentAction, signer: string, ctx: TxnContext): void {
  checkAgentFields(p);
  checkId(p.orgId, 'Organization ID');
  checkPermission(ctx, signer, PIKE_PERMISSIONS.createAgents, p.orgId);
  if (getAgent(ctx, p.publicKey) !== undefined) invalid(`Agent already exists: ${p.publicKey}`);
  checkAgentRoles(ctx, p.roles, p.orgId);
  setAgent(ctx, {
    orgId: p.orgId,
    publicKey: p.publicKey,
    active: p.active,
    roles: p.roles,
    metadata: p.metadata,
  });
}

function updateAgent(p: AgentAction, signer: string, ctx: TxnContext): void {
  checkAgentFields(p);
  const agent: AgentMsg | undefined = getAgent(ctx, p.publicKey);
  if (agent === undefined) invalid(`Agent does not exist: ${p.publicKey}`);
  checkPermission(ctx, signer, PIKE_PERMISSIONS.updateAgents, agent.orgId);
  if (p.roles.length > 0) {
    const keepsAdmin = p.roles.includes(ADMIN_ROLE);
    if (signer === p.publicKey && !keepsAdmin) {
      // Upstream's message spans two source lines, and so carries the newline and indent.
      invalid("An admin cannot remove themselves as admin. 'admin' role must be included\n" + '                    in the roles list.');
    }
    const signing = getAgent(ctx, signer);
    if (signing !== undefined && !signing.roles.includes(ADMIN_ROLE) && !keepsAdmin) {
      invalid("Only agents with the 'admin' permission can remove other admins");
    }
    checkAgentRoles(ctx, p.roles, agent.orgId);
    agent.roles = p.roles;
  }
  if (p.metadata.length > 0) agent.metadata = p.metadata;
  if (p.active !== agent.active) {
    if (signer === p.publicKey) invalid(`Admin may not deactivate themselves: ${signer}`);
    agent.active = p.active;
  }
  setAgent(ctx, agent);
}

/** Common checks of the three role actions. */
function checkRoleAction(orgId: string, name: string, signer: string, ctx: TxnContext, dotFirst: boolean): void {
  if (orgId === '') invalid('Organization ID required');
  if (name === '') invalid('Name required');
  const agent = getAgent(ctx, signer);
  if (agent === undefined) invalid(NOT_AN_AGENT(signer));
  // Delete checks the '.' rule before the reserved name; create and update the reverse.
  if (dotFirst && name.includes('.')) invalid(ROLE_DOT);
  if (name === ADMIN_ROLE) invalid(ADMIN_RESERVED);
  if (name.includes('.')) invalid(ROLE_DOT);
  checkId(orgId, 'Organization ID');
  checkId(name, 'Role name');
}

function roleFrom(p: RoleAction): RoleMsg {
  return {
    orgId: p.orgId,
    name: p.name,
    description: p.description,
    active: p.active,
    permissions: p.permissions,
    allowedOrganizations: p.allowedOrganizations,
    inheritFrom: p.inheritFrom,
  };
}

/*
 * Role actions are checked in the organization whose role changes. Upstream checks them
 * in the signer's own organization, which let any organization's admin write roles of
 * every other one (docs/data-api.md, "Pike permissions").
 */
function createRole(p: RoleAction, signer: string, ctx: TxnContext): void {
  checkRoleAction(p.orgId, p.name, signer, ctx, false);
  checkPermission(ctx, signer, PIKE_PERMISSIONS.createRoles, p.orgId);
  if (getRole(ctx, p.orgId, p.name) !== undefined) invalid(`Role already exists: ${p.name}`);
  setRole(ctx, roleFrom(p));
}

function updateRole(p: RoleAction, signer: string, ctx: TxnContext): void {
  checkRoleAction(p.orgId, p.name, signer, ctx, false);
  checkPermission(ctx, signer, PIKE_PERMISSIONS.updateRoles, p.orgId);
  // An update of a missing role creates it, as upstream does.
  setRole(ctx, roleFrom(p));
}

function deleteRole(p: { orgId: string; name: string }, signer: string, ctx: TxnContext): void {
  checkRoleAction(p.orgId, p.name, signer, ctx, true);
  checkPermission(ctx, signer, PIKE_PERMISSIONS.deleteRoles, p.orgId);
  if (getRole(ctx, p.orgId, p.name) === undefined) invalid(`Role does not exist: ${p.name}`);
  removeRole(ctx, p.orgId, p.name);
}

export function applyPike(payload: Uint8Array, signer: string, ctx: TxnContext): void {
  const p = decodeMsg<PikePayloadMsg>(G.PikePayload, payload, 'pike payload');
  switch (p.action) {
    case PikeAction.CREATE_AGENT:
      return createAgent(p.createAgent ?? EMPTY_AGENT, signer, ctx);
    case PikeAction.UPDATE_AGENT:
      return updateAgent(p.updateAgent ?? EMPTY_AGENT, signer, ctx);
    case PikeAction.CREATE_ORGANIZATION:
      return createOrganization(p.createOrganization ?? EMPTY_ORG, signer, ctx);
    case PikeAction.UPDATE_ORGANIZATION:
      return updateOrganization(p.updateOrganization ?? EMPTY_ORG, signer, ctx);
    case PikeAction.CREATE_ROLE:
      return createRole(p.createRole ?? EMPTY_ROLE, signer, ctx);
    case PikeAction.UPDATE_ROLE:
      return updateRole(p.updateRole ?? EMPTY_ROLE, signer, ctx);
    case PikeAction.DELETE_ROLE:
      return deleteRole(p.deleteRole ?? EMPTY_ROLE, signer, ctx);
    default:
      // DELETE_AGENT and DELETE_ORGANIZATION exist in the payload but not in the contract.
      return invalid('Invalid action');
  }
}

export const pikeFamily: Family = {
  name: PIKE_FAMILY,
  versions: ['1', '2'],
  namespaces: [GRID_NAMESPACE],
  apply(txn: TxnInfo, ctx: TxnContext): void {
    applyPike(txn.payload, txn.header.signerPublicKey, ctx);
  },
};
