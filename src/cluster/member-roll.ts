/**
 * Who may append to the cluster's log, as the link reads it: the registered members (each
 * from the revision it registered at) less those taken out (`cairn cluster remove`, from the
 * revision of the removal). The follower's checks ask it of every entry's signer; the
 * acknowledgements ask whether this member was removed.
 */
import type { Etcd3 } from 'etcd3';
import { log } from '../log.js';
import { NODES, REMOVED, isRemovalOf } from './etcd.js';

export class MemberRoll {
  /** Registered members' keys and the revision each registered at. */
  #members = new Map<string, number>();
  /** Members taken out (`cairn cluster remove`) and the log revision of each removal. */
  readonly #removed = new Map<string, number>();

  constructor(
    private readonly client: Etcd3,
    /** The chain key's public key: a removal counts only when it signed it. */
    private readonly chainKey: string,
    /** This member's node key. */
    private readonly self: string,
  ) {}

  /**
   * A member may append at `rev` if it registered before it (registrations are never deleted)
   * and was not removed before it (`cairn cluster remove`).
   */
  isMember(signer: string, rev: number): boolean {
    const at = this.#members.get(signer);
    const out = this.#removed.get(signer);
    return at !== undefined && at < rev && (out === undefined || rev < out);
  }

  /** The members taken out of the cluster, and the log revision of each removal. */
  get removed(): ReadonlyMap<string, number> {
    return this.#removed;
  }

  /** This member's key was taken out of the cluster (at that log revision), or null. */
  get removedAt(): number | null {
    return this.#removed.get(this.self) ?? null;
  }

  /** Reads the registrations and the removal records again. */
  async load(): Promise<void> {
    const [res, out] = await Promise.all([this.client.getAll().prefix(NODES).exec(), this.client.getAll().prefix(REMOVED).exec()]);
    const m = new Map<string, number>();
    for (const kv of res.kvs) m.set(kv.key.toString().slice(NODES.length), Number(kv.create_revision));
    this.#members = m;
    for (const kv of out.kvs) {
      const key = kv.key.toString().slice(REMOVED.length);
      if (isRemovalOf(kv.value, key, this.chainKey)) this.noteRemoval(key, Number(kv.create_revision));
      else log.warn(`removal record ${kv.key.toString()} refused: not a removal of that key signed by the chain key`);
    }
  }

  /** A member's removal at log revision `rev` (from its log entry or its record: the same revision). */
  noteRemoval(key: string, rev: number): void {
    const known = this.#removed.get(key);
    if (known !== undefined && known <= rev) return;
    this.#removed.set(key, rev);
    if (key === this.self)
      log.error(`this node was removed from the cluster at log revision ${rev} (cairn cluster remove): it acknowledges no batch from now on`);
    else log.info(`member ${key.slice(0, 16)}… was removed from the cluster at log revision ${rev}`);
  }
}
