/**
 * GET /subscriptions: the upstream state-delta websocket. Text frames in, JSON text frames
 * out. `subscribe` (optional `address_prefixes`) sets the socket's filter and at once sends
 * the current head block's delta; afterwards every committed block's delta (block-commit
 * fields plus the state changes under the prefixes) is pushed. `unsubscribe` stops it;
 * `get_block_deltas` asks for one block's delta. Deltas are read from the block's receipts
 * on this thread when the commit is announced; each is computed once for all sockets,
 * and each filtered frame once per distinct prefix list.
 *
 * Bounds: at most `maxSockets` sockets (further upgrades get 503); a socket that does not
 * read is closed once `maxBufferedBytes` wait for it; frames in are at most 16 KiB; a
 * `subscribe` that would resend the delta the socket already got (same block, same
 * prefixes) sends nothing.
 */
import type { WebSocket } from '@trufflesuite/uws-js-unofficial';
import type { HttpServer } from '../http/server.js';
import type { BlockEvent } from '../ledger/protocol.js';
import { log } from '../log.js';
import type { ChainReader } from './chain.js';
import { blockDelta, deltaFrame, type BlockDelta } from './deltas.js';
import { show } from '../codec/show.js';
import { gatewayErrors } from './errors.js';

interface SocketState {
  /** The subscription's prefixes ([] = every address), or null when not subscribed. */
  prefixes: string[] | null;
  /** Block id + prefixes of the last delta a `subscribe` sent, so a repeat sends nothing. */
  lastSent: string | null;
}

export interface SubscriptionLimits {
  maxSockets: number;
  maxBufferedBytes: number;
}

/** Largest frame a client may send (a subscribe with a few hundred prefixes). */
export const MAX_FRAME_BYTES = 16 * 1024;

type Socket = WebSocket<SocketState>;

export class Subscriptions {
  readonly #chain: ChainReader;
  readonly #sockets = new Set<Socket>();
  readonly #off: () => void;
  #latest: BlockDelta | undefined;
  #lastNum: number;

  constructor(server: HttpServer, chain: ChainReader, limits: SubscriptionLimits) {
    this.#chain = chain;
    this.#lastNum = chain.current().num;
    server.ws<SocketState>('/subscriptions', {
      maxPayloadLength: MAX_FRAME_BYTES,
      maxBackpressure: limits.maxBufferedBytes,
      // A socket whose buffer is full is closed, not left to drop frames silently.
      closeOnBackpressureLimit: 1,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => {
        // uWS opens the socket within res.upgrade, so the count is exact here.
        if (this.#sockets.size >= limits.maxSockets) {
          throw gatewayErrors.subscriptionsFull({ max: limits.maxSockets }, { 'retry-after': '5' });
        }
        res.upgrade<SocketState>(
          { prefixes: null, lastSent: null },
          req.getHeader('sec-websocket-key'),
          req.getHeader('sec-websocket-protocol'),
          req.getHeader('sec-websocket-extensions'),
          context,
        );
      },
      open: (ws) => void this.#sockets.add(ws),
      message: (ws, message) => this.#onMessage(ws, Buffer.from(message).toString('utf8')),
      close: (ws) => void this.#sockets.delete(ws),
    });
    // A plain GET (no upgrade) falls through the websocket route to here.
    server.route('get', '/subscriptions', () => {
      throw gatewayErrors.subscriptionsNotWebsocket();
    });
    this.#off = chain.ledger.onBlock((e) => {
      // Called from the committer's message handler: a throw here would end the process.
      try {
        this.#onBlock(e);
      } catch (err) {
        log.error('subscriptions: could not push a block delta', err);
      }
    });
  }

  close(): void {
    this.#off();
    for (const ws of [...this.#sockets]) {
      try {
        ws.end(1001, 'Server shutdown');
      } catch {
        // already closed
      }
    }
    this.#sockets.clear();
  }

  #send(ws: Socket, frame: string): void {
    if (!this.#sockets.has(ws)) return;
    try {
      ws.send(frame);
    } catch (err) {
      log.debug('subscriptions: send to a closed socket', err);
      this.#sockets.delete(ws);
    }
  }

  #error(ws: Socket, error: string): void {
    this.#send(ws, JSON.stringify({ error }));
  }

  #onMessage(ws: Socket, text: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return this.#error(ws, `Invalid input: "${text}"`);
    }
    const o = typeof msg === 'object' && msg !== null && !Array.isArray(msg) ? (msg as Record<string, unknown>) : {};
    const action = o.action ?? '';
    const prefixes = o.address_prefixes ?? [];
    const prefixesOk = Array.isArray(prefixes) && prefixes.every((p) => typeof p === 'string');
    if (action === 'subscribe') {
      if (!prefixesOk) return this.#error(ws, 'address_prefixes must be a list of strings');
      const state = ws.getUserData();
      state.prefixes = prefixes;
      const latest = this.#latestDelta();
      if (!latest) return;
      // The same delta again would only fill the socket's buffer: send it once.
      const key = `${latest.block_id}|${JSON.stringify(prefixes)}`;
      if (state.lastSent === key) return;
      state.lastSent = key;
      this.#send(ws, deltaFrame(latest, prefixes));
    } else if (action === 'unsubscribe') {
      ws.getUserData().prefixes = null;
    } else if (action === 'get_block_deltas') {
      if (!('block_id' in o)) return this.#error(ws, 'Must specify a block id');
      if (!prefixesOk) return this.#error(ws, 'address_prefixes must be a list of strings');
      const block = typeof o.block_id === 'string' ? this.#chain.byId(o.block_id) : undefined;
      if (!block) return this.#error(ws, `Unknown block id "${show(o.block_id)}"`);
      this.#send(ws, deltaFrame(blockDelta(this.#chain, block), prefixes));
    } else {
      this.#error(ws, `Unknown action "${typeof action === 'string' ? action : JSON.stringify(action)}"`);
    }
  }

  /** The delta of the current head block (computed on demand, then kept until the next block). */
  #latestDelta(): BlockDelta | undefined {
    const head = this.#chain.current();
    if (this.#latest?.block_id !== head.id) {
      const block = this.#chain.byId(head.id);
      this.#latest = block && blockDelta(this.#chain, block);
    }
    return this.#latest;
  }

  #onBlock(e: BlockEvent): void {
    if (!e.head) return;
    const from = this.#lastNum + 1;
    this.#lastNum = Math.max(this.#lastNum, e.head.blockNum);
    const subscribed = [...this.#sockets].filter((ws) => ws.getUserData().prefixes !== null);
    if (subscribed.length === 0) return;
    // Normally one block per event; any block not yet announced is sent in order.
    for (let n = from; n <= e.head.blockNum; n++) {
      const block = this.#chain.byNum(n);
      if (!block) continue;
      const delta = blockDelta(this.#chain, block);
      this.#latest = delta;
      const frames = new Map<string, string>();
      for (const ws of subscribed) {
        const state = ws.getUserData();
        const prefixes = state.prefixes;
        if (!prefixes) continue;
        const key = JSON.stringify(prefixes);
        let frame = frames.get(key);
        if (frame === undefined) {
          frame = deltaFrame(delta, prefixes);
          frames.set(key, frame);
        }
        state.lastSent = `${delta.block_id}|${key}`;
        this.#send(ws, frame);
      }
    }
  }
}
