/**
 * Agents of an organization: list, create (`{data: [Agent]}`), fetch, update, under
 * `/organization/{org_id}/agent` (and upstream's read-only `/agent`, `/agent/{key}`). `roles` are sent as role names (`<org>.<name>` for
 * another organization's role) or as Role objects, and must exist; they are answered as
 * Role objects. An update that leaves out `active` keeps the agent's current state
 * (Pike itself would read a missing flag as "deactivate").
 */
import { agentRoleKey, gridKeys, gridPrefixes } from '../ledger/read-model/keys.js';
import type { DataBackend } from './backend.js';
import { listBody, parsePage } from './paging.js';
import { agentJson, requireOrg, sameService } from './records.js';
import { ok, type DataRouter } from './router.js';
import { dataReplies } from './replies.js';
import { PUBLIC_KEY_RE } from './signers.js';
import { submitActions, writeQuery } from './submit.js';
import { at, bad, checkShape, dataItems, isObj, objectBody, reqString, samePath, uniqueIn, type Obj, type Shape } from './validate.js';
import { dataErrors } from './errors.js';

const CREATE: Shape = {
  public_key: reqString,
  org_id: 'string',
  active: 'boolean',
  roles: 'array',
  metadata: 'any',
  service_id: 'string',
  last_updated: 'integer',
};
const UPDATE: Shape = { ...CREATE, public_key: 'string' };

/** Role names for Pike from names or Role objects; each must name an existing role. */
function roleNames(be: DataBackend, orgId: string, v: unknown, path: string): string[] | undefined {
  if (v === undefined) return undefined;
  return (v as unknown[]).map((r, i) => {
    const p = at(path, i);
    let name: string;
    if (typeof r === 'string') name = r;
    else if (isObj(r) && typeof r.name === 'string') {
      const org = typeof r.org_id === 'string' && r.org_id !== '' ? r.org_id : orgId;
      name = org === orgId ? r.name : `${org}.${r.name}`;
    } else throw bad(`\`${p}\` must be a role name or a Role object with a \`name\``);
    const role = name === '' ? undefined : be.rm.get('role', agentRoleKey(orgId, name));
    if (role === undefined) throw bad(`\`${p}\`: unknown role ${name || '""'} for organization ${orgId}`);
    // Another organization's role needs its consent, as the contract checks.
    if (role.org_id !== orgId && !role.allowed_organizations.includes(orgId)) {
      throw bad(`\`${p}\`: role ${name} of organization ${role.org_id} does not list ${orgId} in its allowed_organizations`);
    }
    return name;
  });
}

function agentAction(be: DataBackend, o: Obj, orgId: string, path: string, action: string, active: boolean): Obj & { action: string } {
  const roles = roleNames(be, orgId, o.roles, at(path, 'roles'));
  return { action, org_id: orgId, public_key: o.public_key, active: o.active ?? active, roles, metadata: o.metadata };
}

export function registerAgents(r: DataRouter): void {
  r.route({
    method: 'get',
    path: '/organization/:org_id/agent',
    reply: dataReplies.agents,
    load: ({ be, params }) => requireOrg(be, params.org_id),
    query: parsePage,
    handler: ({ req, be, params, query: page }) => {
      const orgId = params.org_id;
      const slice = be.rm.page('agent', gridPrefixes.agentsOf(orgId), page.offset, page.limit);
      return ok(listBody(req, page, slice, (a) => agentJson(be, a)));
    },
  });

  r.route({
    method: 'get',
    path: '/organization/:org_id/agent/:public_key',
    reply: dataReplies.agent,
    handler: ({ be, params }) => {
      const { org_id: orgId, public_key: pk } = params;
      const agent = be.rm.get('agent', gridKeys.agent(orgId, pk));
      if (agent === undefined) throw dataErrors.orgAgentNotFound({ key: pk, org: orgId });
      return ok(agentJson(be, agent));
    },
  });

  // Upstream's flat read paths, for clients written against it.
  r.route({
    method: 'get',
    path: '/agent',
    reply: dataReplies.agents,
    query: parsePage,
    handler: ({ req, be, query: page }) => {
      return ok(listBody(req, page, be.rm.page('agent', '', page.offset, page.limit), (a) => agentJson(be, a)));
    },
  });

  r.route({
    method: 'get',
    path: '/agent/:public_key',
    reply: dataReplies.agent,
    handler: ({ be, params }) => {
      const pk = params.public_key;
      const ref = be.rm.get('agentByKey', gridKeys.agentByKey(pk));
      const agent = ref === undefined ? undefined : be.rm.get('agent', ref.key);
      if (agent === undefined) throw dataErrors.agentNotFound({ key: pk });
      return ok(agentJson(be, agent));
    },
  });

  r.route({
    method: 'post',
    path: '/organization/:org_id/agent',
    reply: dataReplies.submitted,
    body: dataItems,
    query: writeQuery,
    handler: ({ be, params, body: items, query }) => {
      const orgId = params.org_id;
      requireOrg(be, orgId);
      const signer = be.signers.pick(query.signer);
      const seen = new Set<string>();
      const planned = items.map((item, i) => {
        const path = `data[${i}]`;
        const o = checkShape(item, CREATE, path);
        samePath(o, 'org_id', orgId, path);
        sameService(be, o.service_id, at(path, 'service_id'));
        const pk = o.public_key as string;
        if (!PUBLIC_KEY_RE.test(pk)) throw bad(`\`${path}.public_key\` must be a compressed secp256k1 public key (66 lower-case hex characters)`);
        uniqueIn(seen, pk, `${path}.public_key`);
        const existing = be.rm.get('agentByKey', gridKeys.agentByKey(pk));
        if (existing !== undefined) throw bad(`\`${path}.public_key\`: agent ${pk} already exists`);
        return { action: agentAction(be, o, orgId, path, 'create_agent', true), path };
      });
      return submitActions(be, signer, planned, query.wait);
    },
  });

  r.route({
    method: 'put',
    path: '/organization/:org_id/agent/:public_key',
    reply: dataReplies.submitted,
    body: (req) => checkShape(objectBody(req), UPDATE, ''),
    query: writeQuery,
    handler: ({ be, params, body: o, query }) => {
      const { org_id: orgId, public_key: pk } = params;
      samePath(o, 'org_id', orgId, '');
      samePath(o, 'public_key', pk, '');
      sameService(be, o.service_id, 'service_id');
      const agent = be.rm.get('agent', gridKeys.agent(orgId, pk));
      if (agent === undefined) throw dataErrors.orgAgentNotFound({ key: pk, org: orgId });
      const signer = be.signers.pick(query.signer);
      return submitActions(
        be,
        signer,
        [{ action: agentAction(be, { ...o, public_key: pk }, orgId, '', 'update_agent', agent.active), path: '' }],
        query.wait,
      );
    },
  });
}
