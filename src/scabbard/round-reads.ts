/**
 * The state a circuit's committer builds rounds on, with the reads of one root kept (see
 * RoundReads).
 */
import type { StateStore, StateUpdate } from '../state/state-store.js';

/**
 * The state as of one root, with its reads kept while rounds are built on that root: every
 * contract transaction of a round reads the same namespace registries (and the Merkle walk
 * of each read costs several LMDB reads). A root's values never change, so a kept value is
 * exact; the reads are dropped when a round is built on another root. The same bytes object
 * is returned for an address, which lets Sabre decode a registry once per round.
 */
export class RoundReads implements StateStore {
  #root = '';
  readonly #kept = new Map<string, Buffer | undefined>();
  constructor(private readonly inner: StateStore) {}
  get(root: string, address: string): Buffer | undefined {
    if (root !== this.#root) {
      this.#root = root;
      this.#kept.clear();
    }
    if (this.#kept.has(address)) return this.#kept.get(address);
    const v = this.inner.get(root, address);
    // Bounded by the addresses one round reads (CAIRN_SCABBARD_ROUND_MAX batches).
    if (this.#kept.size < 100_000) this.#kept.set(address, v);
    return v;
  }
  entries(root: string, prefix: string, opts?: { start?: string; reverse?: boolean }): Generator<{ address: string; value: Buffer }> {
    return this.inner.entries(root, prefix, opts);
  }
  update(root: string, sets: Map<string, Uint8Array>, deletes: Iterable<string>): StateUpdate {
    return this.inner.update(root, sets, deletes);
  }
}
