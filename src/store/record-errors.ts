/**
 * What the record stores (the node API's users, keys and node registry, the role grants)
 * throw when a request cannot be carried out on their records: in the stores' own terms,
 * with no HTTP in them. The interfaces turn them into their answers (src/http/record-errors.ts:
 * not found 404, conflict 409, invalid 400, denied 401), with the message unchanged.
 */
export type RecordErrorKind = 'not-found' | 'conflict' | 'invalid' | 'denied';

export class RecordError extends Error {
  constructor(
    readonly kind: RecordErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'RecordError';
  }
}

/** The record named does not exist. */
export class NotFound extends RecordError {
  constructor(message: string) {
    super('not-found', message);
  }
}

/** The change clashes with records already stored (a name taken, a record that may not change). */
export class Conflict extends RecordError {
  constructor(message: string) {
    super('conflict', message);
  }
}

/** The record given is not acceptable as it stands (a field missing or malformed, a reference to nothing). */
export class Invalid extends RecordError {
  constructor(message: string) {
    super('invalid', message);
  }
}

/** The credentials given do not match a stored record. */
export class Denied extends RecordError {
  constructor(message: string) {
    super('denied', message);
  }
}
