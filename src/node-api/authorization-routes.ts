/**
 * Grant administration: `/authorization/permissions`, `/authorization/roles[/{id}]`,
 * `/authorization/assignments[/{identity_type}/{identity}]`, in upstream's shapes. Role
 * permissions must be names from the catalogue.
 */
import { bad, objectBody, optString, PRINTABLE, reqString, reqStringArray, type JsonObject } from './body.js';
import { pageOf, parsePageQuery } from './paging.js';
import { isPermission, permissionList } from '../auth/permissions.js';
import { json, type Router } from './router.js';
import { nodeReplies } from './replies.js';
import type { Rbac } from '../auth/rbac.js';
import type { IdentityType } from './stores.js';
import { nodeErrors } from './errors.js';

const ID_RULE = { max: 256, pattern: PRINTABLE, patternHelp: 'must not contain control characters' };

function permissionsOf(b: JsonObject): string[] {
  const perms = reqStringArray(b, 'permissions', { max: 128 }, 100);
  if (perms.length === 0) throw bad('Invalid role payload: a role requires at least one permission');
  const unknown = perms.filter((p) => !isPermission(p));
  if (unknown.length > 0) throw bad(`Invalid role payload: unknown permission(s) ${unknown.join(', ')}; see /authorization/permissions`);
  return [...new Set(perms)];
}

function identityType(s: string): IdentityType {
  const t = s.toLowerCase();
  if (t !== 'key' && t !== 'user') throw bad(`Invalid identity type ${s.slice(0, 40)}; expected "key" or "user"`);
  return t;
}

function rolesOf(b: JsonObject): string[] {
  const roles = reqStringArray(b, 'roles', ID_RULE, 100);
  if (roles.length === 0) throw bad('Invalid assignment payload: an assignment requires at least one role');
  return [...new Set(roles)];
}

const PUBLIC_KEY_RE = /^0[23][0-9a-f]{64}$/;

/**
 * An assignment must name an identity that can ever authenticate: a user that exists
 * (Biome or OAuth), or a well-formed compressed secp256k1 public key (any key holder can
 * sign a Cylinder token, so keys need no registration). Anything else is refused: a
 * grant to `"null"` or to a typo would sit unused and hide the mistake.
 */
function checkIdentity(type: IdentityType, identity: string, userExists: (id: string) => boolean): void {
  if (type === 'key' && !PUBLIC_KEY_RE.test(identity)) {
    throw bad(
      `Invalid assignment payload: identity ${JSON.stringify(identity.slice(0, 80))} is not a public key (66 lower-case hex characters, starting 02 or 03)`,
    );
  }
  if (type === 'user' && !userExists(identity)) {
    throw nodeErrors.assignmentUserNotFound({ id: JSON.stringify(identity.slice(0, 80)) });
  }
}

export function registerAuthorizationRoutes(r: Router, rbac: Rbac, userExists: (userId: string) => boolean): void {
  r.add({
    method: 'get',
    path: '/authorization/permissions',
    permission: 'authorization.permissions.read',
    reply: nodeReplies.permissions,
    handler: () => json({ data: permissionList() }),
  });

  r.add({
    method: 'get',
    path: '/authorization/roles',
    permission: 'authorization.rbac.read',
    reply: nodeReplies.roles,
    query: (req) => parsePageQuery(req.query),
    handler: ({ req, query }) => json(pageOf(rbac.listRoles(), `${req.path}?`, query)),
  });

  r.add({
    method: 'post',
    path: '/authorization/roles',
    permission: 'authorization.rbac.write',
    reply: nodeReplies.message,
    body: objectBody,
    handler: async ({ body: b }) => {
      const role = { role_id: reqString(b, 'role_id', ID_RULE), display_name: reqString(b, 'display_name', ID_RULE), permissions: permissionsOf(b) };
      await rbac.addRole(role);
      return json({ message: 'Role created successfully' });
    },
  });

  r.add({
    method: 'get',
    path: '/authorization/roles/:role_id',
    permission: 'authorization.rbac.read',
    reply: nodeReplies.role,
    handler: ({ params }) => {
      const role = rbac.getRole(params.role_id);
      if (!role) throw nodeErrors.roleNotFound();
      return json({ data: role });
    },
  });

  r.add({
    method: 'patch',
    path: '/authorization/roles/:role_id',
    permission: 'authorization.rbac.write',
    reply: nodeReplies.message,
    body: objectBody,
    handler: async ({ params, body: b }) => {
      const patch: { display_name?: string; permissions?: string[] } = {};
      const name = optString(b, 'display_name', ID_RULE);
      if (name !== undefined) patch.display_name = name;
      if (b.permissions !== undefined) patch.permissions = permissionsOf(b);
      await rbac.updateRole(params.role_id, patch);
      return json({ message: 'Role updated successfully' });
    },
  });

  r.add({
    method: 'del',
    path: '/authorization/roles/:role_id',
    permission: 'authorization.rbac.write',
    reply: nodeReplies.message,
    handler: async ({ params }) => {
      if (!(await rbac.removeRole(params.role_id))) throw nodeErrors.roleNotFound();
      return json({ message: 'Role deleted successfully' });
    },
  });

  r.add({
    method: 'get',
    path: '/authorization/assignments',
    permission: 'authorization.rbac.read',
    reply: nodeReplies.assignments,
    query: (req) => parsePageQuery(req.query),
    handler: ({ req, query }) => json(pageOf(rbac.listAssignments(), `${req.path}?`, query)),
  });

  r.add({
    method: 'post',
    path: '/authorization/assignments',
    permission: 'authorization.rbac.write',
    reply: nodeReplies.message,
    body: objectBody,
    handler: async ({ body: b }) => {
      const a = {
        identity_type: identityType(reqString(b, 'identity_type', { max: 16 })),
        identity: reqString(b, 'identity', ID_RULE),
        roles: rolesOf(b),
      };
      checkIdentity(a.identity_type, a.identity, userExists);
      await rbac.putAssignment(a, false);
      return json({ message: 'Assignment created successfully' });
    },
  });

  const path = '/authorization/assignments/:identity_type/:identity';
  r.add({
    method: 'get',
    path: path,
    permission: 'authorization.rbac.read',
    reply: nodeReplies.assignment,
    handler: ({ params }) => {
      const a = rbac.getAssignment(identityType(params.identity_type), params.identity);
      if (!a) throw nodeErrors.assignmentNotFound();
      return json({ data: a });
    },
  });

  r.add({
    method: 'patch',
    path: path,
    permission: 'authorization.rbac.write',
    reply: nodeReplies.message,
    // An unknown identity type in the path is refused before the body is read.
    load: ({ params }) => identityType(params.identity_type),
    body: (req) => rolesOf(objectBody(req)),
    handler: async ({ params, loaded: type, body: roles }) => {
      await rbac.putAssignment({ identity_type: type, identity: params.identity, roles }, true);
      return json({ message: 'Assignment updated successfully' });
    },
  });

  r.add({
    method: 'del',
    path: path,
    permission: 'authorization.rbac.write',
    reply: nodeReplies.message,
    handler: async ({ params }) => {
      const type = identityType(params.identity_type);
      if (!(await rbac.removeAssignment(type, params.identity))) throw nodeErrors.assignmentNotFound();
      return json({ message: 'Assignment deleted successfully' });
    },
  });
}
