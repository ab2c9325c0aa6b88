/**
 * The validator's events, as its client event service delivers them: what a committed block
 * yields (`sawtooth/block-commit`, the events processors added, `sawtooth/state-delta`),
 * what of it the filter thread is given to match (filters.ts), and the events a subscriber
 * gets from what it selected.
 *
 * Runs on the HTTP thread, reading blocks and receipts through the query service; no
 * subscriber's filter runs here.
 */
import type { ChainBlock, ChainReader } from '../ledger-api/chain.js';
import { decodeReceipt } from '../ledger-api/json.js';
import { encode, StateChangeList } from '../proto/index.js';
import { STATE_DELTA, type MatchBlock, type Selection } from './filters.js';

export interface EventMsg {
  eventType: string;
  attributes: Array<{ key: string; value: string }>;
  data: Uint8Array;
}

export const BLOCK_COMMIT = 'sawtooth/block-commit';
export { STATE_DELTA };

/** What a block yields before any filtering: computed once per block for all subscribers. */
export interface BlockEvents {
  blockId: string;
  commit: EventMsg;
  /** Events added by processors, in transaction order. */
  added: EventMsg[];
  /** The block's changes, squashed to the last per address, in reverse order of occurrence (as upstream). */
  changes: Array<{ address: string; value: Uint8Array; type: number }>;
}

export function blockEvents(chain: ChainReader, block: ChainBlock): BlockEvents {
  const h = block.json.header;
  const commit: EventMsg = {
    eventType: BLOCK_COMMIT,
    attributes: [
      { key: 'block_id', value: block.id },
      { key: 'block_num', value: String(block.num) },
      { key: 'state_root_hash', value: h.state_root_hash },
      { key: 'previous_block_id', value: h.previous_block_id },
    ],
    data: new Uint8Array(0),
  };
  const receipts = block.txns().map((t) => {
    const bytes = chain.ledger.query.receipt(t.header_signature);
    return bytes === undefined ? undefined : decodeReceipt(bytes);
  });
  const added = receipts.flatMap((r) => r?.events ?? []);
  const seen = new Set<string>();
  const changes: BlockEvents['changes'] = [];
  for (let i = receipts.length - 1; i >= 0; i--) {
    const sc = receipts[i]?.stateChanges ?? [];
    for (let j = sc.length - 1; j >= 0; j--) {
      const c = sc[j];
      if (c === undefined || seen.has(c.address)) continue;
      seen.add(c.address);
      changes.push(c);
    }
  }
  return { blockId: block.id, commit, added, changes };
}

/** What the filter thread needs of a block (filters.ts): types, attributes, addresses. */
export function toMatchBlock(b: BlockEvents): MatchBlock {
  return {
    events: [b.commit, ...b.added].map((e) => ({ eventType: e.eventType, attributes: e.attributes })),
    addresses: b.changes.map((c) => c.address),
  };
}

/** State-delta events already built, per block and per set of changes (subscribers with the same filters get the same one). */
const deltas = new WeakMap<BlockEvents, Map<string, EventMsg>>();

/**
 * The events of one block a subscriber gets, from what the filter thread selected
 * (filters.ts `select`): block-commit and the processors' events it matched, in order, then
 * one state-delta per state-delta subscription that has changes.
 */
export function assemble(b: BlockEvents, s: Selection): EventMsg[] {
  const all = [b.commit, ...b.added];
  const out = s.events.map((i) => all[i]).filter((e): e is EventMsg => e !== undefined);
  const built = deltas.get(b) ?? new Map<string, EventMsg>();
  deltas.set(b, built);
  for (const picked of s.deltas) {
    const key = picked.join(',');
    let event = built.get(key);
    if (!event) {
      const changes = picked.map((i) => b.changes[i]).filter((c): c is BlockEvents['changes'][number] => c !== undefined);
      event = {
        eventType: STATE_DELTA,
        attributes: changes.map((c) => ({ key: 'address', value: c.address })),
        data: encode(StateChangeList, { stateChanges: changes }),
      };
      built.set(key, event);
    }
    out.push(event);
  }
  return out;
}
