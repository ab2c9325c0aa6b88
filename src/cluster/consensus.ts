/**
 * Consensus of a cluster member: etcd has ordered the log already, so every round is final
 * at once. The block header's consensus field names what the block applied: "Cairn-etcd",
 * the log revision (8 bytes), and SHA-256 of the batch ids. It depends on the log only,
 * so every member writes byte-identical headers (and, signing with the chain key,
 * identical block ids); a member that catches up from blocks reads the revision there.
 */
import { sha256 } from '../crypto/secp256k1.js';
import type { Consensus } from '../ledger/consensus.js';

export const CONSENSUS_TAG = Buffer.from('Cairn-etcd');

export class LogConsensus implements Consensus {
  constructor(private readonly revision: () => number) {}

  summarize(batchIds: string[]): Buffer {
    const rev = Buffer.alloc(8);
    rev.writeBigUInt64BE(BigInt(this.revision()));
    return Buffer.concat([CONSENSUS_TAG, rev, sha256(batchIds.join(''))]);
  }

  finalize(): boolean {
    return true;
  }

  close(): void {}
}

/** The log revision a block's consensus field names, or null for another kind of block (genesis). */
export function consensusRevision(field: Uint8Array): number | null {
  const b = Buffer.from(field.buffer, field.byteOffset, field.byteLength);
  if (b.length !== CONSENSUS_TAG.length + 8 + 32 || !b.subarray(0, CONSENSUS_TAG.length).equals(CONSENSUS_TAG)) return null;
  return Number(b.readBigUInt64BE(CONSENSUS_TAG.length));
}
