/**
 * The node API's error catalog (src/http/errors.ts says how catalogs work): every error the
 * node API's own routes answer, in its `{"message"}` body (src/http/message-error.ts). The
 * errors of the permission check and the password hasher, which the data API shares, are in
 * src/auth/errors.ts; the circuits' and scabbard's in src/circuits/errors.ts and
 * src/scabbard/errors.ts. `upstream` names the Splinter REST API whose message it keeps.
 */
import { catalog, type ErrorDef } from '../http/errors.js';

export const NODE_ERRORS = {
  invalidBody: { status: 400, title: 'Invalid Request', message: '{reason}', upstream: null },
  invalidPaging: {
    status: 400,
    title: 'Invalid Paging Query',
    message: 'Invalid {name} value passed: {value}. Error: expected an integer from {min} to {max}',
    upstream: 'Splinter paging',
  },
  protocolVersionsDisagree: {
    status: 400,
    title: 'Protocol Versions Disagree',
    message: 'NodeProtocolVersion and SplinterProtocolVersion headers disagree',
    upstream: null,
  },
  unsupportedProtocolVersion: {
    status: 400,
    title: 'Unsupported Protocol Version',
    message: 'Unsupported NodeProtocolVersion: {version}; this node supports 1 and 2',
    upstream: null,
  },
  protocolVersionTooLow: {
    status: 400,
    title: 'Protocol Version Too Low',
    message: 'This operation needs protocol version {min} or greater; the request asked for {version}',
    upstream: null,
  },
  needsUserIdentity: {
    status: 403,
    title: 'User Identity Required',
    message: 'This operation needs a user identity (a Biome or OAuth2 token)',
    upstream: null,
  },
  unknownAlarmKind: { status: 400, title: 'Unknown Alarm Kind', message: 'unknown alarm kind {kind}: one of {kinds}', upstream: null },
  tooManyLogins: {
    status: 429,
    title: 'Too Many Login Attempts',
    message: 'Too many failed login attempts for this {what}; retry in {sec} s',
    upstream: null,
  },
  userNotFound: { status: 404, title: 'User Not Found', message: 'User ID not found: {id}', upstream: 'Splinter biome' },
  profileNotFound: { status: 404, title: 'Profile Not Found', message: 'No profile for user {id}', upstream: null },
  newKeyPairsNotArray: { status: 400, title: 'Invalid Key Pairs', message: 'Field "new_key_pairs" must be an array', upstream: null },
  newKeyPairsTooMany: { status: 400, title: 'Too Many Key Pairs', message: 'Field "new_key_pairs" has more than 1000 entries', upstream: null },
  logoutNeedsBiome: {
    status: 403,
    title: 'Biome Token Required',
    message: 'Log out needs a Biome token; OAuth sessions end with /oauth/logout',
    upstream: null,
  },
  missingRefreshToken: { status: 400, title: 'Missing Refresh Token', message: 'Missing field "refresh_token"', upstream: 'Splinter biome' },
  invalidRefreshToken: { status: 401, title: 'Invalid Refresh Token', message: 'Invalid refresh token', upstream: 'Splinter biome' },
  keysNotArray: { status: 400, title: 'Invalid Keys', message: 'Request body must be a JSON array of keys', upstream: null },
  tooManyKeys: { status: 400, title: 'Too Many Keys', message: 'At most 1000 keys can be stored per user', upstream: null },
  keyToRenameNotFound: {
    status: 404,
    title: 'Key Not Found',
    message: 'Key with public key {key} and user ID {user} not found',
    upstream: null,
  },
  keyNotFound: {
    status: 404,
    title: 'Key Not Found',
    message: 'Failed to find key with public key: {key} and user id: {user}',
    upstream: 'Splinter biome',
  },
  deleteOthersKey: {
    status: 403,
    title: 'Not Your Key',
    message: 'A user can delete only its own keys; the path names user {user}',
    upstream: null,
  },
  nodeNotFound: { status: 404, title: 'Node Not Found', message: 'Node not found', upstream: 'Splinter registry' },
  nodeIdentityChanged: {
    status: 400,
    title: 'Node Identity Changed',
    message: 'Invalid node: Node identity cannot be changed: {identity}',
    upstream: 'Splinter registry',
  },
  roleNotFound: { status: 404, title: 'Role Not Found', message: 'Role not found', upstream: 'Splinter authorization' },
  assignmentNotFound: { status: 404, title: 'Assignment Not Found', message: 'Assignment not found', upstream: 'Splinter authorization' },
  assignmentUserNotFound: {
    status: 404,
    title: 'Assignment User Not Found',
    message: 'Invalid assignment payload: no user with id {id}; user ids come from /biome/register or /biome/users',
    upstream: null,
  },
  oauthNotConfigured: { status: 404, title: 'OAuth Not Configured', message: 'OAuth is not configured on this node', upstream: null },
  oauthNoRedirect: { status: 400, title: 'No Redirect URL', message: 'No valid redirect URL supplied', upstream: 'Splinter oauth' },
  oauthRedirectNotAllowed: {
    status: 400,
    title: 'Redirect Not Allowed',
    message: 'The redirect URL is not an allowed client address (see CAIRN_OAUTH_ALLOWED_REDIRECTS)',
    upstream: null,
  },
  oauthProviderUnreachable: { status: 502, title: 'OAuth Provider Unreachable', message: 'The OAuth provider is not reachable', upstream: null },
  oauthStateUnknown: {
    status: 400,
    title: 'Unknown OAuth State',
    message: 'Unknown or expired OAuth state; start again at /oauth/login',
    upstream: null,
  },
  oauthLoginRefused: { status: 400, title: 'OAuth Login Refused', message: 'The OAuth provider refused the login: {error}', upstream: null },
  oauthCodeRefused: {
    status: 400,
    title: 'OAuth Code Refused',
    message: 'The OAuth provider did not accept the authorization code',
    upstream: null,
  },
  oauthLogoutNeedsOauth: { status: 403, title: 'OAuth Token Required', message: 'OAuth log out needs an OAuth2 token', upstream: null },
} as const satisfies Record<string, ErrorDef>;

export const nodeErrors = catalog(NODE_ERRORS);
