/**
 * The answer to a record store's error (src/store/record-errors.ts): the same message with
 * the HTTP status of its kind (RECORD_ERRORS, a catalog as src/http/errors.ts describes;
 * the node API's stores are the ones that throw them). Anything else passes through unchanged.
 */
import { RecordError, type RecordErrorKind } from '../store/record-errors.js';
import { catalog, type ErrorDef } from './errors.js';

export const RECORD_ERRORS = {
  'not-found': { status: 404, title: 'Not Found', message: '{message}', upstream: null },
  conflict: { status: 409, title: 'Conflict', message: '{message}', upstream: null },
  invalid: { status: 400, title: 'Bad Request', message: '{message}', upstream: null },
  denied: { status: 401, title: 'Unauthorized', message: '{message}', upstream: null },
} as const satisfies Record<RecordErrorKind, ErrorDef>;

const recordErrors = catalog(RECORD_ERRORS);

export function recordErrorAnswer(err: unknown): unknown {
  return err instanceof RecordError ? recordErrors[err.kind]({ message: err.message }) : err;
}
