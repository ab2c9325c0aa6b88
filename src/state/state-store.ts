/**
 * State access as the ledger uses it, behind interfaces so that the store behind them can
 * change (today the LMDB-backed Merkle tree, MerkleTree; later one kept in memory) without
 * touching the block builder or the query service.
 */

/** Reads of the state as of a root. Throws UnknownRootError for a root it does not hold. */
export interface StateView {
  /** The value at a full address under `root`, or undefined. */
  get(root: string, address: string): Buffer | undefined;
  /**
   * Leaves under `root` whose address starts with `prefix`, ascending (descending when
   * `reverse`), from the first address >= `start` (<= when reverse). Lazy.
   */
  entries(root: string, prefix: string, opts?: { start?: string; reverse?: boolean }): Generator<{ address: string; value: Buffer }>;
}

/** A new root and the records that make it readable (written by the chain writer). */
export interface StateUpdate {
  root: string;
  writes: Array<[Buffer, Buffer]>;
}

/** What the block builder needs: reads, and the root after a set of changes (pure: nothing written). */
export interface StateStore extends StateView {
  update(root: string, sets: Map<string, Uint8Array>, deletes: Iterable<string>): StateUpdate;
}
