/**
 * The batches a cluster member knows to be pending: in the log (appended by this member, or
 * read from it by the follower or a catch-up) and not applied here yet. The ledger's ingest
 * and status reads ask it (AckWriter: has, size, settle); the committer's reports of what it
 * applied empty it.
 */
export class PendingBatches {
  /** Pending batch ids, by the revision of the envelope that holds them. */
  readonly #at = new Map<string, number>();
  readonly #byRev = new Map<number, string[]>();

  /** `applied`: the last log revision the committer applied. */
  constructor(private readonly applied: () => number) {}

  get size(): number {
    return this.#at.size;
  }

  has(id: string): boolean {
    return this.#at.has(id);
  }

  settle(id: string): void {
    this.#at.delete(id);
  }

  /** Batches known to be in the log at `rev`: pending until this member applies it. */
  track(rev: number, ids: string[]): void {
    if (rev <= this.applied()) return;
    const list = this.#byRev.get(rev);
    if (list) list.push(...ids);
    else this.#byRev.set(rev, [...ids]);
    for (const id of ids) this.#at.set(id, rev);
  }

  /** The committer applied the log up to `rev`: the batches of those revisions are no longer pending. */
  appliedUpTo(rev: number): void {
    for (const [r, ids] of this.#byRev) {
      if (r > rev) continue;
      for (const id of ids) if (this.#at.get(id) === r) this.#at.delete(id);
      this.#byRev.delete(r);
    }
  }
}
