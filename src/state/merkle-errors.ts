/** The errors of the Merkle state tree (src/state/merkle.ts): an unknown root, a damaged or missing record. */

/** Thrown when a root passed to get/entries/update is malformed or not in the database. */
export class UnknownRootError extends Error {
  override name = 'UnknownRootError';
  constructor(readonly root: string) {
    super(`state root not found: ${root}`);
  }
}

/**
 * A stored record does not hash to its key, or a record a node points at is missing: the
 * state database is damaged, and what it would return cannot be trusted.
 */
export class CorruptStateError extends Error {
  override name = 'CorruptStateError';
}

/** A record a node points at is not in the database. */
export function missingRecord(hash: Buffer): Error {
  return new CorruptStateError(`merkle record ${hash.toString('hex')} is missing: the state database is corrupt`);
}
