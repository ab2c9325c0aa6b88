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
 * thread and forgotten here). The subscriptions and their match jobs are kept by
 * event-delivery.ts; this module takes the requests and answers them.
 */
import type { Ledger } from '../ledger/ledger.js';
import type { ClientTraffic } from '../ledger/protocol.js';
import { ChainReader } from '../ledger-api/chain.js';
import { encode } from '../proto/index.js';
import { log } from '../log.js';
import { EventDelivery, slice, type Subscriber } from './event-delivery.js';
import { assemble, blockEvents, toMatchBlock, type BlockEvents, type EventMsg } from './events.js';
import { precheck } from './filters.js';
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
/** Event requests (subscribe, unsubscribe, get) waiting their turn: of one peer, and of all. */
const WAITING_PER_PEER = 4;
const WAITING_ALL = 64;

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
  config: Pick<Config, 'peers' | 'endpoint' | 'maxBodyBytes' | 'componentWaitsPerClient' | 'componentWaits' | 'blockCacheBytes'>;
}

export class ClientService {
  readonly #ledger: Ledger;
  readonly #chain: ChainReader;
  readonly #maxSubscribers: number;
  readonly #config: Pick<Config, 'peers' | 'endpoint' | 'maxBodyBytes'>;
  /** Batch-status waits held for clients, bounded per client and in all. */
  readonly #waits: WaitLimits;
  readonly #off: () => void;
  readonly #filters: FilterClient;
  /** The subscriptions and their match jobs. */
  readonly #delivery: EventDelivery;
  readonly #peers = new Map<string, PeerQueue>();
  #waiting = 0;
  #closed = false;
  /** Client messages relayed and not handled yet, by peer in the order peers first sent (see #take). */
  readonly #intake = new Map<string, ClientTraffic[]>();
  #intakeCount = 0;

  constructor(ledger: Ledger, opts: ClientServiceOptions) {
    this.#ledger = ledger;
    // Blocks decoded for event delivery; it serves no block JSON.
    this.#chain = new ChainReader(ledger, { decodedBytes: opts.config.blockCacheBytes, jsonBytes: 0 });
    this.#maxSubscribers = opts.maxSubscribers;
    this.#config = opts.config;
    this.#waits = new WaitLimits(opts.config.componentWaitsPerClient, opts.config.componentWaits);
    this.#filters = new FilterClient((why) => {
      // Its subscriptions went with it: their peers may subscribe again (with their last block).
      const ended = this.#delivery.size;
      this.#delivery.clear();
      log.error(`event filter thread ${why}: ${ended} event subscriptions ended`);
    });
    this.#delivery = new EventDelivery(ledger, this.#chain, this.#filters);
    this.#off = ledger.onBlock(() => this.#delivery.onBlock());
    ledger.onClientMessage((m) => this.#take(m));
  }

  /** Peers subscribed now. */
  get subscribers(): number {
    return this.#delivery.size;
  }

  /** The event filter thread's client (tests end the thread through it). */
  get filterThread(): FilterClient {
    return this.#filters;
  }

  close(): void {
    this.#closed = true;
    this.#off();
    this.#delivery.close();
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
      const sub = this.#delivery.get(m.peer);
      if (sub) {
        this.#delivery.end(sub);
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
            const sub = this.#delivery.get(peer);
            if (sub) this.#delivery.end(sub);
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
        const current = this.#delivery.get(peer);
        if (!current && this.#delivery.size >= this.#maxSubscribers) return full();
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
        if (!this.#delivery.has(peer) && this.#delivery.size >= this.#maxSubscribers) {
          this.#filters.drop(set);
          return full();
        }
        const next = known === undefined ? this.#chain.current().num + 1 : known + 1;
        answer(S.OK);
        const sub: Subscriber = { peer, set, next, queued: false };
        this.#delivery.add(sub);
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
