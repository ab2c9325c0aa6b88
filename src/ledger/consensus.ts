/**
 * Consensus as the committer sees it, after Sawtooth's consensus engine calls: the
 * committer builds a round, asks consensus for the header's consensus field (summarize)
 * and then whether the built round may be written (finalize: yes, no, or later). A single
 * node finalizes at once (SoloConsensus); a circuit's agreement runs on the HTTP thread,
 * where the network is, and answers by message (src/scabbard/agreement-consensus.ts).
 */
import { sha256 } from '../crypto/secp256k1.js';
import type { BuildEntry, BuiltBlock } from './block-builder.js';
import type { RoundTag } from './source.js';

export interface Consensus<E extends BuildEntry = BuildEntry> {
  /** The block header's consensus field for a block of these batches. */
  summarize(batchIds: string[]): Buffer;
  /** Whether the round may be written: at once (a boolean) or once agreed (a promise). */
  finalize(built: BuiltBlock<E>, round: RoundTag | undefined): boolean | Promise<boolean>;
  /** The committer stops: a decision still awaited resolves as a refusal. */
  close(): void;
}

/** One node, no one to agree with: every round is final (Sawtooth's Devmode field). */
export class SoloConsensus implements Consensus {
  summarize(batchIds: string[]): Buffer {
    return Buffer.concat([Buffer.from('Devmode'), sha256(batchIds.join(''))]);
  }

  finalize(): boolean {
    return true;
  }

  close(): void {}
}
