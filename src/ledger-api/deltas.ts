/**
 * The state delta of a committed block as the upstream state-delta websocket shows it:
 * read back from the block's receipts (batches → transactions → receipts), squashed to the
 * last change per address, listed in reverse order of occurrence as upstream's extractor
 * does (receipts and their changes walked backwards).
 */
import type { ChainBlock, ChainReader } from './chain.js';
import { b64, CHANGE_TYPES, decodeReceipt } from './json.js';

/** A state change as MessageToDict renders it: every field present, "" value for a DELETE. */
export interface StateChangeJson {
  address: string;
  type: string;
  value: string;
}

export interface BlockDelta {
  block_id: string;
  block_num: string;
  previous_block_id: string;
  state_changes: StateChangeJson[];
}

export function blockDelta(chain: ChainReader, block: ChainBlock): BlockDelta {
  const query = chain.ledger.query;
  const seen = new Set<string>();
  const changes: StateChangeJson[] = [];
  const txns = block.txns();
  for (let i = txns.length - 1; i >= 0; i--) {
    const bytes = query.receipt(txns[i]!.header_signature);
    if (bytes === undefined) continue;
    const sc = decodeReceipt(bytes).stateChanges;
    for (let j = sc.length - 1; j >= 0; j--) {
      const c = sc[j]!;
      if (seen.has(c.address)) continue;
      seen.add(c.address);
      changes.push({ address: c.address, type: CHANGE_TYPES[c.type] ?? 'TYPE_UNSET', value: b64(c.value) });
    }
  }
  return {
    block_id: block.id,
    block_num: block.json.header.block_num,
    previous_block_id: block.json.header.previous_block_id,
    state_changes: changes,
  };
}

/** The frame for one subscriber: the delta with only the changes under its prefixes (all when none). */
export function deltaFrame(delta: BlockDelta, prefixes: string[]): string {
  const changes = prefixes.length ? delta.state_changes.filter((c) => prefixes.some((p) => c.address.startsWith(p))) : delta.state_changes;
  return JSON.stringify({ ...delta, state_changes: changes });
}
