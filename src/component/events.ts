/**
 * The validator's events, as its client event service delivers them: what a committed block
 * yields (`sawtooth/block-commit`, the events processors added, `sawtooth/state-delta`) and
 * the subscriptions that select among them (event type plus filters on attributes).
 *
 * Runs on the HTTP thread, reading blocks and receipts through the query service.
 */
import type { ChainBlock, ChainReader } from '../ledger-api/chain.js';
import { decodeReceipt } from '../ledger-api/json.js';
import { encode, StateChangeList } from '../proto/index.js';
import * as P from './proto.js';

export interface EventMsg {
  eventType: string;
  attributes: Array<{ key: string; value: string }>;
  data: Uint8Array;
}

export const BLOCK_COMMIT = 'sawtooth/block-commit';
export const STATE_DELTA = 'sawtooth/state-delta';

/** Bounds of what one request may ask (a request over them is refused as INVALID_FILTER). */
export const LIMITS = { subscriptions: 64, filters: 16, matchLength: 1024 };

type Test = (attrs: EventMsg['attributes']) => boolean;

/** A subscription ready to match: its type and one test per filter. */
export interface Subscription {
  eventType: string;
  tests: Test[];
}

/** The filters of a request, compiled; a string says what is wrong (INVALID_FILTER). */
export function compileSubscriptions(subs: P.EventSubscriptionMsg[]): Subscription[] | string {
  if (subs.length > LIMITS.subscriptions) return `At most ${LIMITS.subscriptions} subscriptions in one request`;
  const out: Subscription[] = [];
  for (const s of subs) {
    if (s.filters.length > LIMITS.filters) return `At most ${LIMITS.filters} filters in one subscription`;
    const tests: Test[] = [];
    for (const f of s.filters) {
      const test = compileFilter(f);
      if (typeof test === 'string') return test;
      tests.push(test);
    }
    out.push({ eventType: s.eventType, tests });
  }
  return out;
}

function compileFilter(f: P.EventFilterMsg): Test | string {
  if (f.matchString.length > LIMITS.matchLength) return `A filter's match_string is at most ${LIMITS.matchLength} characters`;
  const T = P.FilterType;
  const values = (attrs: EventMsg['attributes']): string[] => attrs.filter((a) => a.key === f.key).map((a) => a.value);
  switch (f.filterType) {
    case T.SIMPLE_ANY:
      return (attrs) => values(attrs).some((v) => v === f.matchString);
    case T.SIMPLE_ALL:
      return (attrs) => values(attrs).every((v) => v === f.matchString);
    case T.REGEX_ANY:
    case T.REGEX_ALL: {
      let re: RegExp;
      try {
        // Python's re.search: a match anywhere in the value.
        re = new RegExp(f.matchString);
      } catch {
        return `Invalid regular expression in filter on "${f.key}"`;
      }
      return f.filterType === T.REGEX_ANY ? (attrs) => values(attrs).some((v) => re.test(v)) : (attrs) => values(attrs).every((v) => re.test(v));
    }
    default:
      return `Invalid filter type ${f.filterType} in filter on "${f.key}"`;
  }
}

const matches = (s: Subscription, e: EventMsg): boolean => s.eventType === e.eventType && s.tests.every((t) => t(e.attributes));

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

/**
 * The events of one block a subscriber gets: block-commit first, then the processors'
 * events, then one state-delta per state-delta subscription with the changes whose address
 * passes its filters (none: no event). An event several subscriptions match is sent once.
 */
export function selectEvents(b: BlockEvents, subs: Subscription[]): EventMsg[] {
  const out: EventMsg[] = [];
  const any = (e: EventMsg): boolean => subs.some((s) => matches(s, e));
  if (any(b.commit)) out.push(b.commit);
  for (const e of b.added) if (any(e)) out.push(e);
  for (const s of subs) {
    if (s.eventType !== STATE_DELTA) continue;
    const changes = b.changes.filter((c) => s.tests.every((t) => t([{ key: 'address', value: c.address }])));
    if (changes.length === 0) continue;
    out.push({
      eventType: STATE_DELTA,
      attributes: changes.map((c) => ({ key: 'address', value: c.address })),
      data: encode(StateChangeList, { stateChanges: changes }),
    });
  }
  return out;
}
