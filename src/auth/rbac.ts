/**
 * Role-based grants: roles (id, display name, permissions) and one assignment of roles
 * per identity (`key` = public key, `user` = user id). The built-in role `admin`
 * grants every permission and can be neither changed nor removed.
 */
import { Conflict, Invalid, NotFound } from '../store/record-errors.js';
import type { Database, RootDatabase } from 'lmdb';

export interface RoleRecord {
  role_id: string;
  display_name: string;
  permissions: string[];
}

export type IdentityType = 'key' | 'user';

export interface AssignmentRecord {
  identity_type: IdentityType;
  identity: string;
  roles: string[];
}

/** The sub-databases the grants live in (opened with the node API's others, in src/node-api/stores.ts). */
export interface RbacStores {
  root: RootDatabase;
  roles: Database<RoleRecord, string>;
  /** `${identity_type}/${identity}` → assignment */
  assignments: Database<AssignmentRecord, string>;
}

export const ADMIN_ROLE: RoleRecord = { role_id: 'admin', display_name: 'Administrator', permissions: ['*'] };

const assignmentKey = (t: IdentityType, id: string): string => `${t}/${id}`;

export class Rbac {
  readonly #s: RbacStores;

  constructor(stores: RbacStores) {
    this.#s = stores;
  }

  allows(type: IdentityType, identity: string, permission: string): boolean {
    const a = this.#s.assignments.get(assignmentKey(type, identity));
    if (!a) return false;
    for (const roleId of a.roles) {
      if (roleId === ADMIN_ROLE.role_id) return true;
      if (this.#s.roles.get(roleId)?.permissions.includes(permission)) return true;
    }
    return false;
  }

  listRoles(): RoleRecord[] {
    return [ADMIN_ROLE, ...this.#s.roles.getRange({}).map(({ value }) => value)];
  }

  getRole(id: string): RoleRecord | undefined {
    return id === ADMIN_ROLE.role_id ? ADMIN_ROLE : this.#s.roles.get(id);
  }

  addRole(role: RoleRecord): Promise<void> {
    return this.#s.root.transaction(() => {
      if (this.getRole(role.role_id)) throw new Conflict(`Role ${role.role_id} already exists`);
      void this.#s.roles.put(role.role_id, role);
    });
  }

  updateRole(id: string, patch: { display_name?: string; permissions?: string[] }): Promise<void> {
    return this.#s.root.transaction(() => {
      if (id === ADMIN_ROLE.role_id) throw new Conflict("The 'admin' role cannot be altered");
      const cur = this.#s.roles.get(id);
      if (!cur) throw new NotFound(`Role ${id} not found`);
      void this.#s.roles.put(id, { ...cur, ...patch });
    });
  }

  /** Removes the role and takes it out of every assignment. */
  removeRole(id: string): Promise<boolean> {
    return this.#s.root.transaction(() => {
      if (id === ADMIN_ROLE.role_id) throw new Conflict("The 'admin' role cannot be removed");
      if (!this.#s.roles.get(id)) return false;
      void this.#s.roles.remove(id);
      for (const { key, value } of Array.from(this.#s.assignments.getRange({}))) {
        if (value.roles.includes(id)) void this.#s.assignments.put(key, { ...value, roles: value.roles.filter((r) => r !== id) });
      }
      return true;
    });
  }

  listAssignments(): AssignmentRecord[] {
    return Array.from(this.#s.assignments.getRange({}).map(({ value }) => value));
  }

  getAssignment(type: IdentityType, identity: string): AssignmentRecord | undefined {
    return this.#s.assignments.get(assignmentKey(type, identity));
  }

  /** Creates (`mustExist` false) or replaces (`mustExist` true) an assignment. */
  putAssignment(a: AssignmentRecord, mustExist: boolean): Promise<void> {
    return this.#s.root.transaction(() => {
      const key = assignmentKey(a.identity_type, a.identity);
      const exists = this.#s.assignments.get(key) !== undefined;
      if (mustExist && !exists) throw new NotFound(`Assignment for ${a.identity_type} ${a.identity} not found`);
      if (!mustExist && exists) throw new Conflict(`${a.identity_type} ${a.identity} already has an assignment`);
      for (const r of a.roles) if (!this.getRole(r)) throw new Invalid(`Invalid assignment payload: role ${r} does not exist`);
      void this.#s.assignments.put(key, a);
    });
  }

  removeAssignment(type: IdentityType, identity: string): Promise<boolean> {
    return this.#s.root.transaction(() => {
      const key = assignmentKey(type, identity);
      if (this.#s.assignments.get(key) === undefined) return false;
      void this.#s.assignments.remove(key);
      return true;
    });
  }
}
