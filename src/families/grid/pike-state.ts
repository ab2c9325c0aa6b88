/**
 * Reading and writing Pike records (agents, organizations, roles, alternate-id index
 * entries) and evaluating Pike permissions, shared by every supply-chain family.
 */
import type { TxnContext } from '../types.js';
import { agentAddress, alternateIdAddress, organizationAddress, roleAddress } from './addressing.js';
import {
  G,
  checkId,
  findIn,
  invalid,
  removeFrom,
  upsertIn,
  type AgentMsg,
  type AlternateIdIndexEntryMsg,
  type ListSpec,
  type OrganizationMsg,
  type RoleMsg,
} from './common.js';

export const AGENTS: ListSpec<AgentMsg> = { type: G.AgentList, field: 'agents', key: (a) => a.publicKey };
export const ORGS: ListSpec<OrganizationMsg> = {
  type: G.OrganizationList,
  field: 'organizations',
  key: (o) => o.orgId,
};
/** Roles at one address are told apart by org and name. */
export const ROLES: ListSpec<RoleMsg> = { type: G.RoleList, field: 'roles', key: (r) => `${r.orgId}.${r.name}` };
export const ALT_IDS: ListSpec<AlternateIdIndexEntryMsg> = {
  type: G.AlternateIdIndexEntryList,
  field: 'entries',
  key: (e) => `${e.idType}:${e.id}`,
};

export function getAgent(ctx: TxnContext, publicKey: string): AgentMsg | undefined {
  return findIn(ctx, AGENTS, agentAddress(publicKey), publicKey);
}

export function setAgent(ctx: TxnContext, agent: AgentMsg): void {
  upsertIn(ctx, AGENTS, agentAddress(agent.publicKey), agent);
}

export function getOrganization(ctx: TxnContext, orgId: string): OrganizationMsg | undefined {
  return findIn(ctx, ORGS, organizationAddress(orgId), orgId);
}

export function setOrganization(ctx: TxnContext, org: OrganizationMsg): void {
  upsertIn(ctx, ORGS, organizationAddress(org.orgId), org);
}

export function getRole(ctx: TxnContext, orgId: string, name: string): RoleMsg | undefined {
  return findIn(ctx, ROLES, roleAddress(orgId, name), `${orgId}.${name}`);
}

export function setRole(ctx: TxnContext, role: RoleMsg): void {
  upsertIn(ctx, ROLES, roleAddress(role.orgId, role.name), role);
}

export function removeRole(ctx: TxnContext, orgId: string, name: string): void {
  removeFrom(ctx, ROLES, roleAddress(orgId, name), `${orgId}.${name}`);
}

export function getAlternateIdEntry(ctx: TxnContext, idType: string, id: string): AlternateIdIndexEntryMsg | undefined {
  return findIn(ctx, ALT_IDS, alternateIdAddress(idType, id), `${idType}:${id}`);
}

export function setAlternateIdEntry(ctx: TxnContext, entry: AlternateIdIndexEntryMsg): void {
  upsertIn(ctx, ALT_IDS, alternateIdAddress(entry.idType, entry.id), entry);
}

/**
 * Resolves a role name: `<org_id>.<role>` names another org's role (role names hold no
 * '.', so the last one splits), a bare name is looked up in `localOrg`.
 */
export function resolveRole(ctx: TxnContext, name: string, localOrg: string): RoleMsg | undefined {
  const dot = name.lastIndexOf('.');
  if (dot >= 0) return getRole(ctx, name.slice(0, dot), name.slice(dot + 1));
  return getRole(ctx, localOrg, name);
}

/**
 * A role an agent of `agentOrg` may hold: one of its own organization, or another
 * organization's role that lists `agentOrg` in `allowed_organizations` (that
 * organization's consent). Anything else counts as not held.
 */
export function heldRole(ctx: TxnContext, name: string, agentOrg: string): RoleMsg | undefined {
  const role = resolveRole(ctx, name, agentOrg);
  if (role === undefined) return undefined;
  return role.orgId === agentOrg || role.allowedOrganizations.includes(agentOrg) ? role : undefined;
}

/**
 * Refuses role names an agent of `agentOrg` may not be given: another organization's role
 * must exist and list `agentOrg` in `allowed_organizations`. (Upstream accepts any
 * `<org>.<role>` name, which let an outsider hand itself a role of a victim organization.)
 */
export function checkAgentRoles(ctx: TxnContext, roles: string[], agentOrg: string): void {
  for (const name of roles) {
    checkId(name, 'Role name');
    const dot = name.lastIndexOf('.');
    if (dot < 0 || name.slice(0, dot) === agentOrg) continue;
    if (heldRole(ctx, name, agentOrg) === undefined) {
      invalid(`Role ${name} does not exist or does not list organization ${agentOrg} in its allowed organizations`);
    }
  }
}

function rolesGrant(ctx: TxnContext, permission: string, roles: RoleMsg[], recordOwner: string, agentOrg: string, depth: number): boolean {
  // Inheritance cycles in state must not hang the validator; upstream would recurse forever.
  if (depth > 32) return false;
  return roles.some((role) => {
    // A role acts only on records of its own organization. Upstream also let it act for
    // every organization in its `allowed_organizations`, so any organization could write
    // a role of its own naming another one and act for it; here that list names the
    // organizations whose agents may hold the role.
    if (role.permissions.includes(permission) && role.orgId === recordOwner) return true;
    if (role.inheritFrom.length === 0) return false;
    const inherited = role.inheritFrom.map((n) => heldRole(ctx, n, agentOrg)).filter((r): r is RoleMsg => r !== undefined);
    return rolesGrant(ctx, permission, inherited, recordOwner, agentOrg, depth + 1);
  });
}

/**
 * Pike's has_permission: does the (active) agent hold `permission` for `recordOwner`
 * through its roles (own-org names, consented `<org>.<role>` names, and inherited roles)?
 * Throws when the signer is not an agent.
 */
export function hasPermission(ctx: TxnContext, publicKey: string, permission: string, recordOwner: string): boolean {
  const agent = getAgent(ctx, publicKey);
  if (agent === undefined) invalid(`Permission check failed: The signer is not an Agent: ${publicKey}`);
  if (!agent.active) return false;
  const roles = agent.roles.map((n) => heldRole(ctx, n, agent.orgId)).filter((r): r is RoleMsg => r !== undefined);
  return rolesGrant(ctx, permission, roles, recordOwner, agent.orgId, 0);
}

/** Throws upstream's message when the signer lacks the permission. */
export function checkPermission(ctx: TxnContext, signer: string, permission: string, recordOwner: string): void {
  if (!hasPermission(ctx, signer, permission, recordOwner)) {
    invalid(`The signer "${signer}" does not have the "${permission}" permission for org "${recordOwner}"`);
  }
}

/**
 * The Pike permissions (aliases such as `po::partner`) the roles an agent may hold list,
 * with bare role names looked up in `localOrg`. Used by the purchase-order workflows.
 */
export function agentRolePermissions(ctx: TxnContext, agent: AgentMsg, localOrg: string): string[] {
  const perms: string[] = [];
  for (const name of agent.roles) {
    const role = heldRole(ctx, name, localOrg);
    if (role !== undefined) perms.push(...role.permissions);
  }
  return perms;
}

export const PIKE_PERMISSIONS = {
  createAgents: 'pike::can-create-agents',
  updateAgents: 'pike::can-update-agents',
  deleteAgents: 'pike::can-delete-agents',
  updateOrganization: 'pike::can-update-organization',
  createRoles: 'pike::can-create-roles',
  updateRoles: 'pike::can-update-roles',
  deleteRoles: 'pike::can-delete-roles',
} as const;

/** The reserved role every new organization gets. */
export const ADMIN_ROLE = 'admin';
