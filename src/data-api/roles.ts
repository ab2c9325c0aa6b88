/**
 * Roles of an organization: list and create at `/role/{org_id}`, fetch (answered as
 * `{data: [Role], paging}`, as the spec says), update and delete at
 * `/role/{org_id}/{role_name}`. Pike's update is an upsert, so PUT may create a role.
 */
import { submitCreates } from './creates.js';
import { gridKeys, gridPrefixes } from '../ledger/read-model/keys.js';
import { listBody, parsePage, pagingOf } from './paging.js';
import { plainJson, requireOrg, sameService, withService } from './records.js';
import { ok, type DataRouter } from './router.js';
import { dataReplies } from './replies.js';
import { submitActions, writeQuery } from './submit.js';
import { checkShape, dataItems, objectBody, reqString, samePath, type Obj, type Shape } from './validate.js';
import { dataErrors } from './errors.js';

const CREATE: Shape = {
  name: reqString,
  org_id: 'string',
  description: 'string',
  active: 'boolean',
  permissions: 'strings',
  allowed_organizations: 'strings',
  inherit_from: 'strings',
  service_id: 'string',
  last_updated: 'integer',
};
const UPDATE: Shape = { ...CREATE, name: 'string' };

function roleAction(o: Obj, orgId: string, name: string, action: string): Obj & { action: string } {
  return {
    action,
    org_id: orgId,
    name,
    description: o.description,
    active: o.active,
    permissions: o.permissions,
    allowed_organizations: o.allowed_organizations,
    inherit_from: o.inherit_from,
  };
}

export function registerRoles(r: DataRouter): void {
  r.route({
    method: 'get',
    path: '/role/:org_id',
    reply: dataReplies.roles,
    load: ({ be, params }) => requireOrg(be, params.org_id),
    query: parsePage,
    handler: ({ req, be, params, query: page }) => {
      const orgId = params.org_id;
      return ok(listBody(req, page, be.rm.page('role', gridPrefixes.rolesOf(orgId), page.offset, page.limit), plainJson(be)));
    },
  });

  r.route({
    method: 'get',
    path: '/role/:org_id/:role_name',
    reply: dataReplies.roles,
    load: ({ be, params }) => {
      const { org_id: orgId, role_name: name } = params;
      const role = be.rm.get('role', gridKeys.role(orgId, name));
      if (role === undefined) throw dataErrors.roleNotFound({ name, org: orgId });
      return role;
    },
    query: parsePage,
    handler: ({ req, be, loaded: role, query: page }) => {
      return ok({ data: page.offset === 0 ? [withService(be, role)] : [], paging: pagingOf(req, page, 1) });
    },
  });

  r.route({
    method: 'post',
    path: '/role/:org_id',
    reply: dataReplies.submitted,
    body: dataItems,
    query: writeQuery,
    handler: ({ be, params, body, query }) => {
      const orgId = params.org_id;
      requireOrg(be, orgId);
      return submitCreates(be, query, body, {
        shape: CREATE,
        idField: 'name',
        pathFields: { org_id: orgId },
        taken: (name) => (be.rm.has('role', gridKeys.role(orgId, name)) ? `role ${name} already exists in organization ${orgId}` : undefined),
        action: (o, name) => roleAction(o, orgId, name, 'create_role'),
      });
    },
  });

  r.route({
    method: 'put',
    path: '/role/:org_id/:role_name',
    reply: dataReplies.submitted,
    body: (req) => checkShape(objectBody(req), UPDATE, ''),
    query: writeQuery,
    handler: ({ be, params, body: o, query }) => {
      const { org_id: orgId, role_name: name } = params;
      samePath(o, 'org_id', orgId, '');
      samePath(o, 'name', name, '');
      sameService(be, o.service_id, 'service_id');
      requireOrg(be, orgId);
      const signer = be.signers.pick(query.signer);
      return submitActions(be, signer, [{ action: roleAction(o, orgId, name, 'update_role'), path: '' }], query.wait);
    },
  });

  r.route({
    method: 'del',
    path: '/role/:org_id/:role_name',
    reply: dataReplies.submitted,
    query: writeQuery,
    handler: ({ be, params, query }) => {
      const { org_id: orgId, role_name: name } = params;
      if (!be.rm.has('role', gridKeys.role(orgId, name))) throw dataErrors.roleNotFound({ name, org: orgId });
      const signer = be.signers.pick(query.signer);
      return submitActions(be, signer, [{ action: { action: 'delete_role', org_id: orgId, name }, path: '' }], query.wait);
    },
  });
}
