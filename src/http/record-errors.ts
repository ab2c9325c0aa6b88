/**
 * The answer to a record store's error (src/store/record-errors.ts): the same message with
 * the HTTP status of its kind. Anything else passes through unchanged.
 */
import { RecordError, type RecordErrorKind } from '../store/record-errors.js';
import { ApiError } from './api-error.js';

const STATUS: Record<RecordErrorKind, number> = { 'not-found': 404, conflict: 409, invalid: 400, denied: 401 };

export function recordErrorAnswer(err: unknown): unknown {
  return err instanceof RecordError ? new ApiError(STATUS[err.kind], err.message) : err;
}
