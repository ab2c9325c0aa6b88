/**
 * The permission catalogue of the node API. Names are the spec's; the authorization
 * administration permissions (not named by the spec) keep upstream's names.
 */
export const PERMISSIONS = {
  'status.read': ['Status read', 'Allows the client to get node status info'],
  'alarm.write': ['Alarm write', "Allows the client to clear the node's storage alarms (the node retries its storage at once)"],
  'registry.read': ['Registry read', 'Allows the client to read the registry'],
  'registry.write': ['Registry write', 'Allows the client to modify the registry'],
  'circuit.read': ['Circuit read', 'Allows the client to read circuit state'],
  'circuit.write': ['Circuit write', 'Allows the client to modify circuit state'],
  'statesvc.read': ['State service read', "Allows the client to read state services' state and batch statuses"],
  'statesvc.write': ['State service write', 'Allows the client to submit batches to state services'],
  'identity.user.read': ['Identity user read', 'Allows the client to view all users'],
  'identity.user.write': ['Identity user write', 'Allows the client to modify all users'],
  'identity.profile.read': ['Identity profile read', 'Allows the client to view all user profiles'],
  'oauth.user.read': ['OAuth users read', 'Allows the client to read OAuth users'],
  'authorization.rbac.read': ['RBAC read', 'Allows the client to read roles, identities, and role assignments'],
  'authorization.rbac.write': ['RBAC write', 'Allows the client to modify roles, identities, and role assignments'],
  'authorization.permissions.read': ['Permissions read', 'Allows the client to read REST API permissions'],
  // The data API (docs/data-api.md), checked when its authorization is on.
  'data.read': ['Data read', 'Allows the client to read records and batch statuses of the data API'],
  'data.write': ['Data write', 'Allows the client to submit data API changes signed by the node key, and client-signed batches'],
  'data.sign.*': [
    'Data sign as any agent',
    'Allows data API writes signed by any agent key the node holds (?signer=); data.sign.<public key> allows one key',
  ],
} as const satisfies Record<string, readonly [string, string]>;

/** `data.sign.<public key>`: data API writes signed by that one agent key (`?signer=<public key>`). */
export type DataSignPermission = `data.sign.${string}`;
export type Permission = keyof typeof PERMISSIONS | DataSignPermission;

const DATA_SIGN_KEY = /^data\.sign\.0[23][0-9a-f]{64}$/;

export function isPermission(s: string): s is Permission {
  return Object.hasOwn(PERMISSIONS, s) || DATA_SIGN_KEY.test(s);
}

export interface PermissionJson {
  permission_id: string;
  permission_display_name: string;
  permission_description: string;
}

export function permissionList(): PermissionJson[] {
  return (Object.keys(PERMISSIONS) as Array<keyof typeof PERMISSIONS>).map((id) => ({
    permission_id: id,
    permission_display_name: PERMISSIONS[id][0],
    permission_description: PERMISSIONS[id][1],
  }));
}
