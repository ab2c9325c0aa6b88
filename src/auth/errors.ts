/**
 * The errors of the permission check and the password hasher (src/http/errors.ts says how
 * catalogs work), shared by the node API and the data API, each answering them in its own
 * `{"message"}` body.
 */
import { catalog, type ErrorDef } from '../http/errors.js';

export const AUTH_ERRORS = {
  notAuthorized: { status: 401, title: 'Not Authorized', message: 'Client is not authorized: {problem}', upstream: null },
  lacksPermission: { status: 403, title: 'Permission Denied', message: 'Client lacks the permission {permission}', upstream: null },
  passwordsBusy: { status: 503, title: 'Passwords Busy', message: 'The node is busy checking passwords; retry in {sec} s', upstream: null },
} as const satisfies Record<string, ErrorDef>;

export const authErrors = catalog(AUTH_ERRORS);
