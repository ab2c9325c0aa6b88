/**
 * A client of the component endpoint as upstream's tools are (the REST API process,
 * event subscribers): a ZeroMQ DEALER exchanging `Message` envelopes encoded with the
 * sawtooth-sdk package's own protobufs. Replies are matched by correlation id; CLIENT_EVENTS
 * messages are collected in order.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Dealer } from 'zeromq';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const pb: any = require('sawtooth-sdk/protobuf');
export const MT = pb.Message.MessageType;

export interface DecodedEvent {
  eventType: string;
  attributes: Array<{ key: string; value: string }>;
  data: Uint8Array;
}

export class ZmqClient {
  readonly sock: Dealer;
  /** Every CLIENT_EVENTS message received, as its list of events. */
  readonly eventLists: DecodedEvent[][] = [];
  /** Messages that answered nothing this client asked (and were not events). */
  unmatched = 0;
  readonly #replies = new Map<string, (m: { type: number; content: Buffer }) => void>();
  readonly #eventWaiters: Array<() => void> = [];
  #chain: Promise<void> = Promise.resolve();
  closed = false;

  /** `read: false` leaves incoming messages unread (a subscriber that stops reading). */
  constructor(
    readonly endpoint: string,
    opts: { read?: boolean; receiveHighWaterMark?: number } = {},
  ) {
    this.sock = new Dealer({
      linger: 0,
      receiveHighWaterMark: opts.receiveHighWaterMark ?? 1000,
      receiveBufferSize: opts.read === false ? 4096 : -1,
    });
    this.sock.connect(endpoint);
    if (opts.read !== false) void this.#loop();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sock.close();
  }

  sendRaw(frames: Buffer | Buffer[]): Promise<void> {
    this.#chain = this.#chain.then(() => (this.closed ? undefined : this.sock.send(frames)));
    return this.#chain;
  }

  /** Sends a message and resolves with the reply carrying its correlation id. */
  async request(type: number, content: Uint8Array, timeoutMs = 20_000): Promise<{ type: number; content: Buffer }> {
    const correlationId = randomBytes(16).toString('hex');
    const reply = new Promise<{ type: number; content: Buffer }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to message type ${type}`)), timeoutMs);
      this.#replies.set(correlationId, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
    await this.sendRaw(Buffer.from(pb.Message.encode({ messageType: type, correlationId, content }).finish()));
    return reply;
  }

  /** Subscribes; resolves with the response's status and message. */
  async subscribe(
    subscriptions: Array<{ eventType: string; filters?: Array<{ key: string; matchString: string; filterType: number }> }>,
    lastKnownBlockIds: string[] = [],
  ): Promise<{ status: number; responseMessage: string }> {
    const r = await this.request(
      MT.CLIENT_EVENTS_SUBSCRIBE_REQUEST,
      pb.ClientEventsSubscribeRequest.encode({ subscriptions, lastKnownBlockIds }).finish(),
    );
    if (r.type !== MT.CLIENT_EVENTS_SUBSCRIBE_RESPONSE) throw new Error(`answered with message type ${r.type}`);
    return pb.ClientEventsSubscribeResponse.decode(r.content);
  }

  /** Resolves once `n` event lists have arrived in all (rejects after the timeout). */
  async waitEventLists(n: number, timeoutMs = 30_000): Promise<DecodedEvent[][]> {
    const deadline = Date.now() + timeoutMs;
    while (this.eventLists.length < n) {
      if (Date.now() > deadline) throw new Error(`${this.eventLists.length} of ${n} event lists arrived`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 500);
        this.#eventWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.eventLists.slice(0, n);
  }

  async #loop(): Promise<void> {
    try {
      for await (const [frame] of this.sock) {
        if (frame === undefined) continue;
        const msg = pb.Message.decode(frame);
        const waiter = this.#replies.get(msg.correlationId);
        if (waiter) {
          this.#replies.delete(msg.correlationId);
          waiter({ type: msg.messageType, content: Buffer.from(msg.content) });
        } else if (msg.messageType === MT.CLIENT_EVENTS) {
          this.eventLists.push(pb.EventList.decode(msg.content).events);
          for (const w of this.#eventWaiters.splice(0)) w();
        } else {
          this.unmatched++;
        }
      }
    } catch {
      // closed
    }
  }
}

/** An attribute's value of an event ('' when absent). */
export const attr = (e: DecodedEvent, key: string): string => e.attributes.find((a) => a.key === key)?.value ?? '';
