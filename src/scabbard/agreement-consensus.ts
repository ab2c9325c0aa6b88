/**
 * Consensus of a circuit's committer: the circuit's agreement (the two-phase commit among
 * its members) runs on the HTTP thread, where the network is. A built round is summarized
 * to it by message (state root, verdicts, batches) and written only once it answers
 * `decide` with finalize; a round fetched from a peer (catch-up) was agreed already and is
 * final here when it gives the root and verdicts it gave there.
 */
import { log } from '../log.js';
import type { BuildEntry, BuiltBlock } from '../ledger/block-builder.js';
import type { Consensus } from '../ledger/consensus.js';
import type { RoundTag } from '../ledger/source.js';
import type { FromCommitter } from '../ledger/protocol.js';
import type { AgreedRounds } from './round-source.js';
import { roundRoot, roundVerdicts } from './records.js';

const SCABBARD = Buffer.from('scabbard');
const NONE = new Uint8Array(0);

export class AgreementConsensus implements Consensus<BuildEntry> {
  #waiting: { id: string; resolve(ok: boolean): void } | null = null;

  constructor(
    private readonly rounds: AgreedRounds,
    private readonly post: (m: FromCommitter) => void,
    private readonly label: string,
  ) {}

  summarize(): Buffer {
    return SCABBARD;
  }

  finalize(built: BuiltBlock, tag: RoundTag | undefined): boolean | Promise<boolean> {
    const round = tag && this.rounds.round(tag);
    if (!tag || !round) return false;
    const root = roundRoot(built);
    const verdicts = roundVerdicts(built);
    if (tag.expect) {
      if (root === tag.expect.root && verdicts === tag.expect.verdicts) return true;
      log.error(
        `${this.label}: round ${tag.height} from ${this.rounds.fromOf(tag) ?? 'a peer'} gives root ${root.slice(0, 12)}… here, not ${tag.expect.root.slice(0, 12)}…; catch-up stopped`,
      );
      this.rounds.stopCatchUp();
      return false;
    }
    this.post({
      ...round,
      // Only the coordinator's agreement sends the batches on (a member's has them): not copied back otherwise.
      batches: this.rounds.coordinator ? round.batches : NONE,
      type: 'summary',
      follows: true,
      root,
      verdicts,
      included: built.included.map((i) => i.entry.id),
      invalid: built.invalid.map((i) => i.entry.id),
    });
    return new Promise<boolean>((resolve) => {
      this.#waiting = { id: tag.id, resolve };
    });
  }

  /**
   * The agreement's answer for round `id` (a proposal not built yet is not built at all). A
   * round to finalize that this committer does not hold (given up, or built by a committer
   * thread before a restart) is answered `dropped`: the agreement must not wait for it.
   */
  decide(id: string, finalize: boolean, pauseMs = 0): void {
    if (pauseMs > 0) this.rounds.pause(pauseMs);
    const w = this.#waiting;
    if (w && w.id === id) {
      this.#waiting = null;
      w.resolve(finalize);
      return;
    }
    this.rounds.forget(id);
    if (finalize) this.post({ type: 'dropped', id });
  }

  /** Gives up the round awaiting a decision (catch-up takes over); the agreement is told. */
  abandon(): void {
    const w = this.#waiting;
    if (!w) return;
    this.#waiting = null;
    this.post({ type: 'dropped', id: w.id });
    w.resolve(false);
  }

  close(): void {
    const w = this.#waiting;
    this.#waiting = null;
    w?.resolve(false);
  }
}
