/**
 * Reading and writing Pike records (agents, organizations, roles, alternate-id index
 * entries) and evaluating Pike permissions, shared by every supply-chain family.
 */
import type { TxnContext } from '../types.js';
import {
  agentAddress,
  alternateIdAddress,
  organizationAddress,
  roleAddress,
} from './addressing.js';
import {
  G,
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

export function getAlternateIdEntry(
  ctx: TxnContext,
  idType: string,
  id: string,
): AlternateIdIndexEntryMsg | undefined {
  return findIn(ctx, ALT_IDS, alternateIdAddress(idType, id), `${idType}:${id}`);
}

export function setAlternateIdEntry(ctx: TxnContext, entry: AlternateIdIndexEntryMsg): void {
  upsertIn(ctx, ALT_IDS, alternateIdAddress(entry.idType, entry.id), entry);
}

/**
 * Resolves a role name held by an agent: `<org_id>.<role>` names another org's role,
 * a bare name is looked up in `localOrg`.
 */
export function resolveRole(ctx: TxnContext, name: string, localOrg: string): RoleMsg | undefined {
  if (name.includes('.')) {
    const [org, role] = name.split('.');
    return getRole(ctx, org ?? '', role ?? '');
  }
  return getRole(ctx, localOrg, name);
}

function rolesGrant(
  ctx: TxnContext,
  permission: string,
  roles: RoleMsg[],
  recordOwner: string,
  agentOrg: string,
  depth: number,
): boolean {
  // Inheritance cycles in state must not hang the validator; upstream would recurse forever.
  if (depth > 32) return false;
  return roles.some((role) => {
    if (role.permissions.includes(permission)) {
      return role.orgId === recordOwner || role.allowedOrganizations.includes(recordOwner);
    }
    if (role.inheritFrom.length === 0) return false;
    const inherited = role.inheritFrom
      .map((n) => resolveRole(ctx, n, agentOrg))
      .filter((r): r is RoleMsg => r !== undefined)
      .filter((r) => r.orgId === agentOrg || r.allowedOrganizations.includes(agentOrg));
    return rolesGrant(ctx, permission, inherited, recordOwner, agentOrg, depth + 1);
  });
}

/**
 * Pike's has_permission: does the (active) agent hold `permission` for `recordOwner`
 * through its roles (own-org names, `<org>.<role>` names, and inherited roles)?
 * Throws when the signer is not an agent.
 */
export function hasPermission(ctx: TxnContext, publicKey: string, permission: string, recordOwner: string): boolean {
  const agent = getAgent(ctx, publicKey);
  if (agent === undefined) invalid(`Permission check failed: The signer is not an Agent: ${publicKey}`);
  if (!agent.active) return false;
  const roles = agent.roles
    .map((n) => resolveRole(ctx, n, agent.orgId))
    .filter((r): r is RoleMsg => r !== undefined);
  return rolesGrant(ctx, permission, roles, recordOwner, agent.orgId, 0);
}

/** Throws upstream's message when the signer lacks the permission. */
export function checkPermission(ctx: TxnContext, signer: string, permission: string, recordOwner: string): void {
  if (!hasPermission(ctx, signer, permission, recordOwner)) {
    invalid(`The signer "${signer}" does not have the "${permission}" permission for org "${recordOwner}"`);
  }
}

/**
 * The Pike permissions (aliases such as `po::partner`) an agent's roles list, with bare
 * role names looked up in `localOrg`. Used by the purchase-order workflows.
 */
export function agentRolePermissions(ctx: TxnContext, agent: AgentMsg, localOrg: string): string[] {
  const perms: string[] = [];
  for (const name of agent.roles) {
    const role = resolveRole(ctx, name, localOrg);
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
