/**
 * The clients of the component endpoint, served on the HTTP thread: the committer thread's
 * socket relays their envelopes here (ClientTraffic, src/ledger/protocol.ts) and sends the
 * answers back. Everything is read through the query service the REST gateway reads.
 *
 * The client event service: one subscription set per peer (a new subscribe replaces it),
 * catch-up from `last_known_block_ids`, then one CLIENT_EVENTS message per committed block
 * that yields a matching event. Bounds: `maxSubscribers` peers at once (further subscribes
 * are refused), catch-up in steps of CATCH_UP_STEP blocks, and the endpoint's per-peer
 * queue (a subscriber that stops reading is cut off by the committer thread and forgotten
 * here).
 */
import { randomBytes } from 'node:crypto';
import type { Ledger } from '../ledger/ledger.js';
import type { ClientTraffic } from '../ledger/protocol.js';
import { ChainReader } from '../ledger-api/chain.js';
import { encode, EventList } from '../proto/index.js';
import { log } from '../log.js';
import { blockEvents, compileSubscriptions, selectEvents, type BlockEvents, type Subscription } from './events.js';
import * as P from './proto.js';
import { clientRequest } from './client-requests.js';
import type { Config } from '../config.js';

/** last_known_block_ids value meaning "nothing yet": catch-up from genesis. */
export const NULL_BLOCK_ID = '0000000000000000';
/** Block ids one request may name. */
const MAX_BLOCK_IDS = 256;
/** The client message types that are requests (the others in 100-130 and 500-506 are answers, never answered back). */
const REQUEST_TYPES = new Set([100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 125, 127, 128, 129, 500, 502, 505]);
/** Blocks delivered to one subscriber per turn of the event loop. */
const CATCH_UP_STEP = 64;

interface Subscriber {
  peer: string;
  subs: Subscription[];
  /** Number of the next block to deliver. */
  next: number;
  pumping: boolean;
}

export interface ClientServiceOptions {
  /** Peers subscribed at once (--component-subscribers). */
  maxSubscribers: number;
  /** What CLIENT_PEERS_GET and CLIENT_STATUS_GET report (as GET /peers and /status do). */
  config: Pick<Config, 'peers' | 'endpoint' | 'maxBodyBytes'>;
}

export class ClientService {
  readonly #ledger: Ledger;
  readonly #chain: ChainReader;
  readonly #subscribers = new Map<string, Subscriber>();
  readonly #maxSubscribers: number;
  readonly #config: Pick<Config, 'peers' | 'endpoint' | 'maxBodyBytes'>;
  readonly #off: () => void;
  /** The last block's events (every subscriber reads the same block as it commits). */
  #cached: BlockEvents | undefined;
  #closed = false;

  constructor(ledger: Ledger, opts: ClientServiceOptions) {
    this.#ledger = ledger;
    this.#chain = new ChainReader(ledger);
    this.#maxSubscribers = opts.maxSubscribers;
    this.#config = opts.config;
    this.#off = ledger.onBlock(() => {
      for (const s of this.#subscribers.values()) this.#pump(s);
    });
    ledger.onClientMessage((m) => this.#onTraffic(m));
  }

  /** Peers subscribed now. */
  get subscribers(): number {
    return this.#subscribers.size;
  }

  close(): void {
    this.#closed = true;
    this.#off();
    this.#subscribers.clear();
  }

  #onTraffic(m: ClientTraffic): void {
    if (m.type === 'client-gone') {
      if (this.#subscribers.delete(m.peer)) log.info(`event subscriber ${m.peer.slice(0, 12)} ${m.why}`);
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
      case K.CLIENT_EVENTS_UNSUBSCRIBE_REQUEST:
        this.#subscribers.delete(peer);
        return this.#reply(peer, env, K.CLIENT_EVENTS_UNSUBSCRIBE_RESPONSE, P.ClientEventsUnsubscribeResponse, { status: P.AckStatus.OK });
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
      const a = await clientRequest({ chain: this.#chain, config: this.#config }, env.messageType, env.content);
      if (this.#closed) return;
      if (a) this.#reply(peer, env, a.kind, a.type, a.msg);
      else if (REQUEST_TYPES.has(env.messageType)) this.#reply(peer, env, K.NETWORK_ACK, P.NetworkAcknowledgement, { status: P.AckStatus.ERROR });
    } catch (err) {
      log.debug(`component endpoint: client request ${env.messageType} refused: ${err instanceof Error ? err.message : String(err)}`);
      if (!this.#closed) this.#reply(peer, env, K.NETWORK_ACK, P.NetworkAcknowledgement, { status: P.AckStatus.ERROR });
    }
  }

  #subscribe(peer: string, env: P.EnvelopeMsg): void {
    const m = P.ClientEventsSubscribeRequest.decode(env.content) as unknown as P.ClientEventsSubscribeRequestMsg;
    const S = P.SubscribeStatus;
    const answer = (status: number, responseMessage = ''): void =>
      this.#reply(peer, env, P.Kind.CLIENT_EVENTS_SUBSCRIBE_RESPONSE, P.ClientEventsSubscribeResponse, { status, responseMessage });
    const subs = compileSubscriptions(m.subscriptions);
    if (typeof subs === 'string') return answer(S.INVALID_FILTER, subs);
    if (!this.#subscribers.has(peer) && this.#subscribers.size >= this.#maxSubscribers) {
      return answer(S.INVALID_FILTER, `Too many subscribers (${this.#maxSubscribers}); try again later`);
    }
    const head = this.#chain.current().num;
    let next = head + 1;
    if (m.lastKnownBlockIds.length > 0) {
      const known = this.#newestKnown(m.lastKnownBlockIds);
      if (known === undefined) return answer(S.UNKNOWN_BLOCK, 'None of the last known blocks is on the chain');
      next = known + 1;
    }
    answer(S.OK);
    const sub: Subscriber = { peer, subs, next, pumping: false };
    this.#subscribers.set(peer, sub);
    this.#pump(sub);
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

  /** Delivers the blocks a subscriber has not had, a step at a time, in order. */
  #pump(sub: Subscriber): void {
    if (sub.pumping || this.#closed) return;
    const head = this.#chain.current().num;
    const stop = Math.min(head, sub.next + CATCH_UP_STEP - 1);
    for (; sub.next <= stop; sub.next++) {
      // A peer that went (or was cut off) stops getting events.
      if (this.#subscribers.get(sub.peer) !== sub) return;
      const events = this.#eventsOf(sub.next);
      if (!events) continue;
      const selected = selectEvents(events, sub.subs);
      if (selected.length === 0) continue;
      this.#send(sub.peer, P.Kind.CLIENT_EVENTS, randomBytes(16).toString('hex'), encode(EventList, { events: selected }));
    }
    if (sub.next <= head) {
      // More to catch up: the next step after the messages of other peers.
      sub.pumping = true;
      setImmediate(() => {
        sub.pumping = false;
        this.#pump(sub);
      });
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
    const subs = compileSubscriptions(m.subscriptions);
    if (typeof subs === 'string') return answer(S.INVALID_FILTER);
    if (m.blockIds.length > MAX_BLOCK_IDS) return answer(S.UNKNOWN_BLOCK);
    const blocks = m.blockIds.map((id) => this.#chain.byId(id));
    const events: object[] = [];
    for (const block of blocks) {
      if (!block) return answer(S.UNKNOWN_BLOCK);
      events.push(...selectEvents(blockEvents(this.#chain, block), subs));
    }
    answer(S.OK, events);
  }
}
