/**
 * The delivery of events to the subscribers of the client event service
 * (src/component/client-service.ts, on the HTTP thread): who is subscribed, from which
 * block, and the match jobs that bring them their events. The service takes the requests
 * (subscribe, unsubscribe, the peer gone) and hands the subscribers over; each committed
 * block puts them in line again (`onBlock`).
 *
 * Subscribers wait in line for a match job, those at the same block in one; a job reads up
 * to CATCH_UP_STEP blocks (JOB_VALUES values) once, the event filter thread
 * (filter-client.ts) matches them against each subscriber's filters, and each subscriber
 * gets one CLIENT_EVENTS message per block that yields a matching event, through the
 * committer thread's socket. At most JOBS_IN_FLIGHT jobs are at the filter thread at once;
 * the work between turns of the event loop is sliced (`slice`). A subscription whose
 * matching of one block took over MATCH_BUDGET_MS, or whose filters the thread lost, is cut
 * off.
 */
import { randomBytes } from 'node:crypto';
import type { Ledger } from '../ledger/ledger.js';
import type { ChainReader } from '../ledger-api/chain.js';
import { encode, EventList } from '../proto/index.js';
import { log } from '../log.js';
import { assemble, blockEvents, toMatchBlock, type BlockEvents } from './events.js';
import { MATCH_BUDGET_MS } from './filters.js';
import type { FilterClient } from './filter-client.js';
import type { FromFilters } from './filter-thread.js';
import * as P from './proto.js';

/** Blocks in one match job (a subscriber catching up). */
const CATCH_UP_STEP = 64;
/** A job takes no further block once it holds this many values to match (attributes and addresses). */
const JOB_VALUES = 16_384;
/**
 * Match jobs at the filter thread at once: one keeps it busy while this thread reads the
 * next; more would only hold more blocks in memory.
 */
const JOBS_IN_FLIGHT = 2;
/**
 * Work of one job or get on this thread (reading blocks, building and sending events)
 * between turns of the event loop: a catch-up of many large blocks for many subscribers
 * is done in slices (a 31-block catch-up of 200-change blocks for 16 subscribers held
 * /status for 2.7 s in one piece; bench/events.ts).
 */
const SLICE_MS = 10;

/** Resolves on the next turn of the event loop once `SLICE_MS` has been used since `start.at`. */
export async function slice(start: { at: number }): Promise<void> {
  if (performance.now() - start.at < SLICE_MS) return;
  await new Promise((resolve) => setImmediate(resolve));
  start.at = performance.now();
}

export interface Subscriber {
  peer: string;
  /** The filter thread's name for its filters. */
  set: number;
  /** Number of the next block to deliver. */
  next: number;
  /** Waiting for a match job, or in one. */
  queued: boolean;
}

export class EventDelivery {
  readonly #ledger: Ledger;
  readonly #chain: ChainReader;
  readonly #filters: FilterClient;
  readonly #subscribers = new Map<string, Subscriber>();
  /** Subscribers waiting for a match job, in order. */
  #queue: Subscriber[] = [];
  #jobs = 0;
  /** The last block's events (every subscriber reads the same block as it commits). */
  #cached: BlockEvents | undefined;
  #closed = false;

  constructor(ledger: Ledger, chain: ChainReader, filters: FilterClient) {
    this.#ledger = ledger;
    this.#chain = chain;
    this.#filters = filters;
  }

  /** Peers subscribed now. */
  get size(): number {
    return this.#subscribers.size;
  }

  /** The subscription of a peer, if it has one. */
  get(peer: string): Subscriber | undefined {
    return this.#subscribers.get(peer);
  }

  has(peer: string): boolean {
    return this.#subscribers.has(peer);
  }

  /** A new subscription (replacing the peer's one, if any): in line for its first blocks. */
  add(sub: Subscriber): void {
    this.#subscribers.set(sub.peer, sub);
    this.#enqueue(sub);
    this.#dispatch();
  }

  /** A block was committed: every subscriber has one more to get. */
  onBlock(): void {
    for (const s of this.#subscribers.values()) this.#enqueue(s);
    this.#dispatch();
  }

  /** Every subscription ends at once (the filter thread, which held their filters, was lost). */
  clear(): void {
    this.#subscribers.clear();
    this.#queue = [];
  }

  close(): void {
    this.#closed = true;
    this.clear();
  }

  #send(peer: string, kind: number, correlationId: string, content: Uint8Array): void {
    this.#ledger.sendClient(peer, encode(P.Envelope, { messageType: kind, correlationId, content }));
  }

  /** Ends a subscription (unsubscribed, gone, cut off). */
  end(sub: Subscriber): void {
    if (this.#subscribers.get(sub.peer) === sub) this.#subscribers.delete(sub.peer);
    this.#filters.drop(sub.set);
  }

  /** Puts a subscriber that has blocks to get in line for a match job. */
  #enqueue(sub: Subscriber): void {
    if (sub.queued || this.#closed || this.#subscribers.get(sub.peer) !== sub || sub.next > this.#chain.current().num) return;
    sub.queued = true;
    this.#queue.push(sub);
  }

  /** Starts match jobs while there is room: the first in line, with everyone in line at its block. */
  #dispatch(): void {
    while (this.#jobs < JOBS_IN_FLIGHT && this.#queue.length > 0) {
      const live = (s: Subscriber): boolean => this.#subscribers.get(s.peer) === s;
      const first = this.#queue.shift() as Subscriber;
      if (!live(first)) continue;
      const group = [first];
      this.#queue = this.#queue.filter((s) => {
        if (!live(s)) return false;
        if (s.next !== first.next) return true;
        group.push(s);
        return false;
      });
      void this.#job(group);
    }
  }

  /**
   * One match job: the blocks from the group's next one (up to CATCH_UP_STEP, JOB_VALUES
   * values, the head), matched on the filter thread for each subscriber of the group; each
   * gets its events in order, then waits in line again if it has more blocks to get.
   */
  async #job(group: Subscriber[]): Promise<void> {
    this.#jobs++;
    try {
      await this.#runJob(group);
    } finally {
      this.#jobs--;
      for (const sub of group) sub.queued = false;
    }
    for (const sub of group) this.#enqueue(sub);
    this.#dispatch();
  }

  async #runJob(group: Subscriber[]): Promise<void> {
    const start = { at: performance.now() };
    const from = (group[0] as Subscriber).next;
    const head = this.#chain.current().num;
    const blocks: Array<BlockEvents | undefined> = [];
    let values = 0;
    for (let n = from; n <= head && blocks.length < CATCH_UP_STEP && values < JOB_VALUES; n++) {
      const b = this.#eventsOf(n);
      blocks.push(b);
      if (b) values += b.changes.length + [b.commit, ...b.added].reduce((sum, e) => sum + e.attributes.length, 0);
      await slice(start);
    }
    let r: FromFilters | undefined;
    try {
      const match = blocks.map((b) => (b ? toMatchBlock(b) : { events: [], addresses: [] }));
      r = await this.#filters.ask({ op: 'match', sets: group.map((s) => s.set), blocks: match });
    } catch {
      return; // the thread was lost: its subscriptions are ended already
    }
    start.at = performance.now();
    // A peer that went, unsubscribed or subscribed anew meanwhile gets nothing more of this job.
    const current = (sub: Subscriber): boolean => !this.#closed && this.#subscribers.get(sub.peer) === sub;
    for (const [i, sub] of group.entries()) {
      if (!current(sub)) continue;
      const result = 'results' in r ? r.results[i] : undefined;
      if (!result) {
        this.end(sub);
        log.warn(
          `event subscriber ${sub.peer.slice(0, 12)} cut off: ${'error' in r ? r.error : 'its filters are gone from the event filter thread'}`,
        );
        continue;
      }
      for (const [k, selection] of result.selections.entries()) {
        if (!current(sub)) break;
        const b = blocks[k];
        const events = b ? assemble(b, selection) : [];
        if (events.length > 0) this.#send(sub.peer, P.Kind.CLIENT_EVENTS, randomBytes(16).toString('hex'), encode(EventList, { events }));
        sub.next = from + k + 1;
        await slice(start);
      }
      if (result.over && current(sub)) {
        this.end(sub);
        log.warn(
          `event subscriber ${sub.peer.slice(0, 12)} cut off: its filters took ${result.over.ms} ms on block ${sub.next} (at most ${MATCH_BUDGET_MS} ms a block)`,
        );
      }
    }
  }

  #eventsOf(num: number): BlockEvents | undefined {
    const block = this.#chain.byNum(num);
    if (!block) return undefined;
    if (this.#cached?.blockId !== block.id) this.#cached = blockEvents(this.#chain, block);
    return this.#cached;
  }
}
