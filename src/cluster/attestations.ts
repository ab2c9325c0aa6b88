/**
 * A cluster member's attestations: each member writes its head (height, block id, state
 * root) to etcd as it moves, and compares the others' with its own blocks once it has
 * reached their heights. A member whose block at a height differs from another's raises the
 * DIVERGED alarm when it is the odd one out, which stops its acknowledgements; member.ts
 * reads and writes the records each round, this file keeps the verdicts.
 */
import type { Etcd3 } from 'etcd3';
import { log } from '../log.js';
import type { Ledger } from '../ledger/ledger.js';
import type { ChainHead } from '../store/ledger-stores.js';
import { ATTEST, type Attestation } from './etcd.js';

export class Attestations {
  /** Other members' attestations not checked yet (their height is past this member's head). */
  readonly #unchecked = new Map<string, Attestation>();
  /** Whether each other member's chain agreed with this one where last compared. */
  readonly #verdicts = new Map<string, { agrees: boolean; detail: string }>();
  #divergedRaised = false;
  #warned = false;
  /** The height this member last attested. */
  #attested = -1;

  constructor(
    private readonly client: Etcd3,
    /** This member's node key. */
    private readonly self: string,
  ) {}

  /** This member's attestation of its head, written when the head moved. */
  async publish(head: ChainHead): Promise<void> {
    if (head.blockNum === this.#attested) return;
    const a: Attestation = { height: head.blockNum, blockId: head.blockId, stateRoot: head.stateRoot };
    await this.client.put(`${ATTEST}${this.self}`).value(JSON.stringify(a)).exec();
    this.#attested = head.blockNum;
  }

  /** Another member's attestation, as read this round: compared once this member reaches its height. */
  note(key: string, a: Attestation): void {
    this.#unchecked.set(key, a);
  }

  /** Compares the others' attestations at heights this member has reached with its own blocks. */
  check(ledger: Ledger): void {
    if (this.#divergedRaised) return;
    let changed = false;
    for (const [key, a] of this.#unchecked) {
      if (a.height > ledger.head.blockNum) continue;
      this.#unchecked.delete(key);
      const mine = ledger.query.blockId(a.height);
      if (mine === undefined) continue;
      // A member that differed once stays apart: chains that split never meet again.
      if (this.#verdicts.get(key)?.agrees === false) continue;
      const agrees = mine === a.blockId;
      this.#verdicts.set(key, {
        agrees,
        detail: agrees ? '' : `block ${a.height} here is ${mine.slice(0, 16)}…, member ${key.slice(0, 16)}… has ${a.blockId.slice(0, 16)}…`,
      });
      changed = true;
    }
    if (!changed) return;
    // This member is the one that diverged when those that differ from it are at least as
    // many as those that agree with it (itself counted) and those not compared yet: with two
    // members, both stop; with three, the one that differs from the two others.
    const differ = [...this.#verdicts.entries()].filter(([, v]) => !v.agrees);
    if (differ.length === 0) return;
    const agree = 1 + [...this.#verdicts.values()].filter((v) => v.agrees).length;
    // Members with a chain (an attestation) not compared yet: their height is past this one's.
    const unknown = [...this.#unchecked.keys()].filter((k) => !this.#verdicts.has(k)).length;
    const cause = differ.map(([, v]) => v.detail).join('; ');
    if (differ.length >= agree + unknown) {
      this.#divergedRaised = true;
      log.error(`this member's chain diverged from the cluster's: ${cause}`);
      ledger.markFaulty(`chain diverged from the cluster's: ${cause}`, 'DIVERGED');
    } else if (!this.#warned) {
      this.#warned = true;
      log.warn(`another member's chain differs from this one and the majority's: ${cause}`);
    }
  }
}
