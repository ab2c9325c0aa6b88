/**
 * The clients of the component endpoint, served on the HTTP thread: the committer thread's
 * socket relays their envelopes here (ClientTraffic, src/ledger/protocol.ts) and sends the
 * answers back. Everything is read through the query service the REST gateway reads.
 *
 * The client event service: one subscription set per peer (a new subscribe replaces it),
 * catch-up from `last_known_block_ids`, then one CLIENT_EVENTS message per committed block
 * that yields a matching event. The subscribers' filters are compiled and matched on the
 * event filter thread (filter-client.ts, filter-thread.ts), never here: this thread reads
 * each block's events once, hands them over, and sends what the thread selected. A peer's
 * event requests (subscribe, unsubscribe, get) are taken in order, one at a time.
 *
 * Bounds: `maxSubscribers` peers at once (further subscribes are refused); the filters'
 * caps (filters.ts, checked here from the text before anything is handed over); a
 * subscription whose matching of one block takes more than MATCH_BUDGET_MS on the filter
 * thread is cut off; at most JOBS_IN_FLIGHT match jobs at the thread, each of at most
 * CATCH_UP_STEP blocks, subscribers waiting their turn in order (those at the same block in
 * one job); at most WAITING_PER_PEER and WAITING_ALL event requests waiting; and the
 * endpoint's per-peer queue (a subscriber that stops reading is cut off by the committer
 * thread and forgotten here).
 */
import { randomBytes } from 'node:crypto';
import type { Ledger } from '../ledger/ledger.js';
import type { ClientTraffic } from '../ledger/protocol.js';
import { ChainReader } from '../ledger-api/chain.js';
import { encode, EventList } from '../proto/index.js';
import { log } from '../log.js';
import { assemble, blockEvents, toMatchBlock, type BlockEvents, type EventMsg } from './events.js';
import { MATCH_BUDGET_MS, precheck } from './filters.js';
import { FilterClient } from './filter-client.js';
import type { FromFilters } from './filter-thread.js';
import * as P from './proto.js';
import { clientRequest, WaitLimits } from './client-requests.js';
import type { Config } from '../config.js';

/** last_known_block_ids value meaning "nothing yet": catch-up from genesis. */
export const NULL_BLOCK_ID = '0000000000000000';
/** Block ids one request may name. */
const MAX_BLOCK_IDS = 256;
/** The client message types that are requests (the others in 100-130 and 500-506 are answers, never answered back). */
const REQUEST_TYPES = new Set([100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 125, 127, 128, 129, 500, 502, 505]);
/** Client messages handled per turn of the event loop (a status request's refusal costs about 0.1 ms here). */
const INTAKE_SLICE = 64;
/** Blocks in one match job (a subscriber catching up). */
const CATCH_UP_STEP = 64;
/** A job takes no further block once it holds this many values to match (attributes and addresses). */
const JOB_VALUES = 16_384;
/**
 * Match jobs at the filter thread at once: one keeps it busy while this thread reads the
 * next; more would only hold more blocks in memory.
 */
const JOBS_IN_FLIGHT = 2;
/** Event requests (subscribe, unsubscribe, get) waiting their turn: of one peer, and of all. */
const WAITING_PER_PEER = 4;
const WAITING_ALL = 64;
/**
 * Work of one job or get on this thread (reading blocks, building and sending events)
 * between turns of the event loop: a catch-up of many large blocks for many subscribers
 * is done in slices (a 31-block catch-up of 200-change blocks for 16 subscribers held
 * /status for 2.7 s in one piece; bench/events.ts).
 */
const SLICE_MS = 10;

/** Resolves on the next turn of the event loop once `SLICE_MS` has been used since `start.at`. */
async function slice(start: { at: number }): Promise<void> {
  if (performance.now() - start.at < SLICE_MS) return;
  await new Promise((resolve) => setImmediate(resolve));
  start.at = performance.now();
}

interface Subscriber {
  peer: string;
  /** The filter thread's name for its filters. */
  set: number;
  /** Number of the next block to deliver. */
  next: number;
  /** Waiting for a match job, or in one. */
  queued: boolean;
}

/** The event requests of one peer, taken in order. */
interface PeerQueue {
  tail: Promise<void>;
  waiting: number;
  /** The peer disconnected (or was cut off) meanwhile. */
  gone: boolean;
}

export interface ClientServiceOptions {
  /** Peers subscribed at once (--component-subscribers). */
  maxSubscribers: number;
  /** What CLIENT_PEERS_GET and CLIENT_STATUS_GET report (as GET /peers and /status do), and the bounds on status waits. */
  config: Pick<Config, 'peers' | 'endpoint' | 'maxBodyBytes' | 'componentWaitsPerClient' | 'componentWaits'>;
}

export class ClientService {
  readonly #ledger: Ledger;
  readonly #chain: ChainReader;
  readonly #subscribers = new Map<string, Subscriber>();
  readonly #maxSubscribers: number;
  readonly #config: Pick<Config, 'peers' | 'endpoint' | 'maxBodyBytes'>;
  /** Batch-status waits held for clients, bounded per client and in all. */
  readonly #waits: WaitLimits;
  readonly #off: () => void;
  readonly #filters: FilterClient;
  /** Subscribers waiting for a match job, in order. */
  #queue: Subscriber[] = [];
  #jobs = 0;
  readonly #peers = new Map<string, PeerQueue>();
  #waiting = 0;
  /** The last block's events (every subscriber reads the same block as it commits). */
  #cached: BlockEvents | undefined;
  #closed = false;
  /** Client messages relayed and not handled yet, by peer in the order peers first sent (see #take). */
  readonly #intake = new Map<string, ClientTraffic[]>();
  #intakeCount = 0;

  constructor(ledger: Ledger, opts: ClientServiceOptions) {
    this.#ledger = ledger;
    this.#chain = new ChainReader(ledger);
    this.#maxSubscribers = opts.maxSubscribers;
    this.#config = opts.config;
    this.#waits = new WaitLimits(opts.config.componentWaitsPerClient, opts.config.componentWaits);
    this.#filters = new FilterClient((why) => {
      // Its subscriptions went with it: their peers may subscribe again (with their last block).
      const ended = this.#subscribers.size;
      this.#subscribers.clear();
      this.#queue = [];
      log.error(`event filter thread ${why}: ${ended} event subscriptions ended`);
    });
    this.#off = ledger.onBlock(() => {
      for (const s of this.#subscribers.values()) this.#enqueue(s);
      this.#dispatch();
    });
    ledger.onClientMessage((m) => this.#take(m));
  }

  /** Peers subscribed now. */
  get subscribers(): number {
    return this.#subscribers.size;
  }

  /** The event filter thread's client (tests end the thread through it). */
  get filterThread(): FilterClient {
    return this.#filters;
  }

  close(): void {
    this.#closed = true;
    this.#off();
    this.#subscribers.clear();
    this.#queue = [];
    this.#filters.close();
  }

  /**
   * Client messages are handled INTAKE_SLICE per turn of the event loop: the committer
   * thread relays a flood from one socket (20,000 status requests) as fast as it reads it,
   * and handled in one go it held this thread, and GET /status, for seconds. Peers take
   * turns, one message each per pass, each peer's in the order it sent them: a flood from
   * one socket delays another client's request by one pass, not by the flood (first in,
   * first out, the last of 20,000 waited 17 s, and so did anyone who came after it).
   */
  #take(m: ClientTraffic): void {
    const q = this.#intake.get(m.peer);
    if (q) q.push(m);
    else this.#intake.set(m.peer, [m]);
    if (++this.#intakeCount === 1) setImmediate(() => this.#drainIntake());
  }

  #drainIntake(): void {
    let budget = INTAKE_SLICE;
    while (budget > 0 && this.#intake.size > 0 && !this.#closed) {
      for (const [peer, q] of this.#intake) {
        const m = q.shift();
        if (q.length === 0) this.#intake.delete(peer);
        if (m === undefined) continue;
        this.#intakeCount--;
        this.#onTraffic(m);
        if (--budget === 0) break;
      }
    }
    if (this.#closed) {
      this.#intake.clear();
      this.#intakeCount = 0;
    } else if (this.#intakeCount > 0) setImmediate(() => this.#drainIntake());
  }

  #onTraffic(m: ClientTraffic): void {
    if (m.type === 'client-gone') {
      const sub = this.#subscribers.get(m.peer);
      if (sub) {
        this.#end(sub);
        log.info(`event subscriber ${m.peer.slice(0, 12)} ${m.why}`);
      }
      const q = this.#peers.get(m.peer);
      if (q) q.gone = true;
      return;
    }
    let env: P.EnvelopeMsg;
    try {
      env = P.decodeEnvelope(m.body);
    } catch {
      return; // not an envelope: the committer thread decoded it once already, so this does not happen
    }
    try {
      this.#handle(m.peer, env);
    } catch (err) {
      // Malformed content in a well-formed envelope: answered, never silence.
      log.debug(`component endpoint: client message ${env.messageType} refused: ${err instanceof Error ? err.message : String(err)}`);
      this.#reply(m.peer, env, P.Kind.NETWORK_ACK, P.NetworkAcknowledgement, { status: P.AckStatus.ERROR });
    }
  }

  #reply(peer: string, env: P.EnvelopeMsg, kind: number, type: typeof P.Envelope, msg: object): void {
    this.#send(peer, kind, env.correlationId, encode(type, msg));
  }

  #send(peer: string, kind: number, correlationId: string, content: Uint8Array): void {
    this.#ledger.sendClient(peer, encode(P.Envelope, { messageType: kind, correlationId, content }));
  }

  #handle(peer: string, env: P.EnvelopeMsg): void {
    const K = P.Kind;
    switch (env.messageType) {
      case K.CLIENT_EVENTS_SUBSCRIBE_REQUEST:
        return this.#subscribe(peer, env);
      case K.CLIENT_EVENTS_UNSUBSCRIBE_REQUEST: {
        const answer = (status: number): void =>
          this.#reply(peer, env, K.CLIENT_EVENTS_UNSUBSCRIBE_RESPONSE, P.ClientEventsUnsubscribeResponse, { status });
        // After the peer's subscribes still waiting, as the peer sent them.
        return this.#inTurn(
          peer,
          () => answer(P.AckStatus.ERROR),
          async () => {
            const sub = this.#subscribers.get(peer);
            if (sub) this.#end(sub);
            answer(P.AckStatus.OK);
          },
        );
      }
      case K.CLIENT_EVENTS_GET_REQUEST:
        return this.#get(peer, env);
      default:
        void this.#request(peer, env);
    }
  }

  /** A client request (lists, gets, submit, status): answered when its reads (or its wait) are done. */
  async #request(peer: string, env: P.EnvelopeMsg): Promise<void> {
    const K = P.Kind;
    try {
      const a = await clientRequest({ chain: this.#chain, config: this.#config, peer, waits: this.#waits }, env.messageType, env.content);
      if (this.#closed) return;
      if (a) this.#reply(peer, env, a.kind, a.type, a.msg);
      else if (REQUEST_TYPES.has(env.messageType)) this.#reply(peer, env, K.NETWORK_ACK, P.NetworkAcknowledgement, { status: P.AckStatus.ERROR });
    } catch (err) {
      log.debug(`component endpoint: client request ${env.messageType} refused: ${err instanceof Error ? err.message : String(err)}`);
      if (!this.#closed) this.#reply(peer, env, K.NETWORK_ACK, P.NetworkAcknowledgement, { status: P.AckStatus.ERROR });
    }
  }

  /**
   * Runs a peer's event request after the ones it sent before (they wait on the filter
   * thread); `refuse` answers at once when too many wait already.
   */
  #inTurn(peer: string, refuse: () => void, task: (q: PeerQueue) => Promise<void>): void {
    const known = this.#peers.get(peer);
    if ((known?.waiting ?? 0) >= WAITING_PER_PEER || this.#waiting >= WAITING_ALL) return refuse();
    const q = known ?? { tail: Promise.resolve(), waiting: 0, gone: false };
    this.#peers.set(peer, q);
    q.waiting++;
    this.#waiting++;
    q.tail = q.tail
      .then(() => (this.#closed ? undefined : task(q)))
      .catch((err: unknown) => log.debug(`component endpoint: event request refused: ${err instanceof Error ? err.message : String(err)}`))
      .finally(() => {
        q.waiting--;
        this.#waiting--;
        if (q.waiting === 0 && this.#peers.get(peer) === q) this.#peers.delete(peer);
      });
  }

  #subscribe(peer: string, env: P.EnvelopeMsg): void {
    const m = P.ClientEventsSubscribeRequest.decode(env.content) as unknown as P.ClientEventsSubscribeRequestMsg;
    const S = P.SubscribeStatus;
    const answer = (status: number, responseMessage = ''): void =>
      this.#reply(peer, env, P.Kind.CLIENT_EVENTS_SUBSCRIBE_RESPONSE, P.ClientEventsSubscribeResponse, { status, responseMessage });
    // The bounds that need no compiling, here: nothing over them reaches the filter thread.
    const pre = precheck(m.subscriptions);
    if (typeof pre === 'string') return answer(S.INVALID_FILTER, pre);
    const full = (): void => answer(S.INVALID_FILTER, `Too many subscribers (${this.#maxSubscribers}); try again later`);
    this.#inTurn(
      peer,
      () => answer(S.INVALID_FILTER, 'Too many event requests waiting; try again once they are answered'),
      async (q) => {
        const current = this.#subscribers.get(peer);
        if (!current && this.#subscribers.size >= this.#maxSubscribers) return full();
        let known: number | undefined;
        if (m.lastKnownBlockIds.length > 0) {
          known = this.#newestKnown(m.lastKnownBlockIds);
          if (known === undefined) return answer(S.UNKNOWN_BLOCK, 'None of the last known blocks is on the chain');
        }
        const set = this.#filters.reserve();
        let r: FromFilters;
        try {
          r = await this.#filters.ask({ op: 'subscribe', subs: m.subscriptions, replaces: current?.set ?? null }, set);
        } catch {
          return answer(S.INVALID_FILTER, 'The event filter thread stopped; subscribe again');
        }
        if ('error' in r) return answer(S.INVALID_FILTER, r.error);
        if (q.gone || this.#closed) return this.#filters.drop(set);
        // (the thread dropped `current`'s filters for these: `current`, if still here, is replaced)
        if (!this.#subscribers.has(peer) && this.#subscribers.size >= this.#maxSubscribers) {
          this.#filters.drop(set);
          return full();
        }
        const next = known === undefined ? this.#chain.current().num + 1 : known + 1;
        answer(S.OK);
        const sub: Subscriber = { peer, set, next, queued: false };
        this.#subscribers.set(peer, sub);
        this.#enqueue(sub);
        this.#dispatch();
      },
    );
  }

  /** The highest block number among `ids` on the chain (-1 for the null id), or undefined. */
  #newestKnown(ids: string[]): number | undefined {
    let best: number | undefined;
    for (const id of ids.slice(0, MAX_BLOCK_IDS)) {
      const num = id === NULL_BLOCK_ID ? -1 : this.#chain.byId(id)?.num;
      if (num !== undefined && (best === undefined || num > best)) best = num;
    }
    return best;
  }

  /** Ends a subscription (unsubscribed, gone, cut off). */
  #end(sub: Subscriber): void {
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
        this.#end(sub);
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
        this.#end(sub);
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

  #get(peer: string, env: P.EnvelopeMsg): void {
    const m = P.ClientEventsGetRequest.decode(env.content) as unknown as P.ClientEventsGetRequestMsg;
    const S = P.EventsGetStatus;
    const answer = (status: number, events: object[] = []): void =>
      this.#reply(peer, env, P.Kind.CLIENT_EVENTS_GET_RESPONSE, P.ClientEventsGetResponse, { status, events });
    if (typeof precheck(m.subscriptions) === 'string') return answer(S.INVALID_FILTER);
    if (m.blockIds.length > MAX_BLOCK_IDS) return answer(S.UNKNOWN_BLOCK);
    this.#inTurn(
      peer,
      () => answer(S.INTERNAL_ERROR),
      async () => {
        const start = { at: performance.now() };
        const blocks: BlockEvents[] = [];
        for (const id of m.blockIds) {
          const block = this.#chain.byId(id);
          if (!block) return answer(S.UNKNOWN_BLOCK);
          blocks.push(blockEvents(this.#chain, block));
          await slice(start);
        }
        let r: FromFilters;
        try {
          r = await this.#filters.ask({ op: 'get', subs: m.subscriptions, blocks: blocks.map(toMatchBlock) });
        } catch {
          return answer(S.INTERNAL_ERROR);
        }
        if (!('selections' in r)) return answer(S.INVALID_FILTER);
        start.at = performance.now();
        const events: EventMsg[] = [];
        for (const [i, selection] of r.selections.entries()) {
          events.push(...assemble(blocks[i] as BlockEvents, selection));
          await slice(start);
        }
        answer(S.OK, events);
      },
    );
  }
}
