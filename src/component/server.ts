/**
 * The component endpoint: a ZeroMQ ROUTER socket where transaction processors written with
 * the Sawtooth SDKs register their families and execute transactions, speaking the
 * validator's messages (src/proto/validator.proto). It runs in the committer thread, next
 * to the block builder: a processor's state reads are answered from the block being built
 * (each transaction sees the writes of those before it) without crossing threads, and
 * blocks of native families never touch it.
 *
 * It is the engine's ExternalExecutor (src/ledger/executor.ts), registered as `component`
 * (src/ledger/plugins.ts; the committer thread makes one when its options carry
 * `component`, see the end of this file): it says where a family
 * runs, and runs a transaction on a processor of its family, retrying on another one (or
 * deferring the batch) when the processor goes away or answers INTERNAL_ERROR.
 *
 * A processor that stops answering holds only its own transactions: one that does not
 * answer a process request within the processor timeout, or misses its pings for as long,
 * is set aside (unregistered from its families, logged, reported to the HTTP thread). The
 * transaction goes to another processor of the family or its batch waits, PENDING with the
 * reason, while blocks go on with the other batches. A processor set aside for a missed
 * answer serves again once it answers late or registers again; one set aside for missed
 * pings, once it says anything at all.
 *
 * The processors, their families, the process requests in flight to them and the set-aside
 * bookkeeping are kept by the registry (src/component/processors.ts); this module owns the
 * socket, its clients and the executor's turns (retries, back-off); a processor's requests
 * on its transaction's context are answered by src/component/state-requests.ts.
 *
 * Clients share the socket, as on the validator's port: the client requests and the event
 * service (message types 100-130 and 500-506) are handed to the HTTP thread as they came
 * (`ClientLink`), which answers them from the query service; the answers come back through
 * `sendTo`. A client that stops reading is cut off when its ZeroMQ queue is full: nothing
 * waits for it. Any other message type is answered NETWORK_ACK ERROR.
 */
import { Router } from 'zeromq';
import { encode } from '../proto/index.js';
import { InvalidTransaction, type TxnContext, type TxnInfo } from '../families/types.js';
import { TRANSACTION_FAMILIES_SETTING, familyKey, readAllowed } from './families-setting.js';
import { eventAdd, receiptAddData, stateDelete, stateGet, stateSet } from './state-requests.js';
import { ExternalUnavailable, type ExternalExecutor, type FamilyRoute, type StateReader } from '../ledger/executor.js';
import { registerExecutor } from '../ledger/plugins.js';
import type { ProcessorsReport } from '../ledger/protocol.js';
import { log } from '../log.js';
import { MAX_MISSED_PINGS, ProcessorRegistry } from './processors.js';
import * as P from './proto.js';

/** What the committer thread is told about the endpoint (plain data: CommitterOptions.component, declared at the end of this file). */
export interface ComponentOptions {
  /** host:port to bind. */
  bind: string;
  /** Built-in families the operator wants run by processors instead (by name). */
  externalFamilies: string[];
  /** Limits; defaults below (tests shorten them). A processor that does not answer a process request within this time is set aside. */
  processTimeoutMs?: number;
  internalErrorRetries?: number;
  pingIntervalMs?: number;
  /** Messages queued for one peer before a send to it fails (ZeroMQ's send high-water mark). */
  sendHighWaterMark?: number;
}

/** Where client messages go (the HTTP thread, through the committer's port). */
export interface ClientLink {
  /** A client message from `peer` (hex routing id): the whole envelope as received. */
  message(peer: string, body: Uint8Array): void;
  /** `peer` disconnected, or was cut off because its queue was full. */
  gone(peer: string, why: 'disconnected' | 'cut off'): void;
}

/** The highest TpRegisterRequest.protocol_version served (RAW header style came with 1). */
export const MAX_PROCESSOR_PROTOCOL_VERSION = 1;

/** Client message types: requests 100-130 and the event service 500-506. */
export const isClientType = (t: number): boolean => (t >= 100 && t <= 130) || (t >= 500 && t <= 506);

/** Message types that are answers themselves (never answered back, so two endpoints cannot ping-pong). */
const isAnswerType = (t: number): boolean => (t >= 1 && t <= 16 && t % 2 === 0) || t === 300 || t === 701;

/**
 * A processor that does not answer a process request within this time is set aside
 * (--processor-timeout). The block being built waits this long at most, once per silent
 * processor: long enough for a slow apply (a Sabre contract, a cold JIT), short enough
 * that one hung processor costs the other families one pause, not their commits.
 */
const PROCESS_TIMEOUT_MS = 30_000;
/** INTERNAL_ERROR answers re-tried for one transaction in one round before its batch waits. */
const INTERNAL_ERROR_RETRIES = 5;
/** First back-off after INTERNAL_ERROR, doubled per retry. */
const RETRY_BACKOFF_MS = 100;
/** PING_REQUEST to every processor this often, as the validator does (at most a third of the process timeout). */
const PING_INTERVAL_MS = 10_000;
/** Frames larger than this close the sender's connection (ZeroMQ's own limit). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/** ZMQ_ROUTER_NOTIFY (libzmq draft option): an empty message on each connect and disconnect. */
const ZMQ_ROUTER_NOTIFY = 97;
const NOTIFY_CONNECT_AND_DISCONNECT = 3;
/** ZeroMQ's default: messages queued for one peer. */
const SEND_HIGH_WATER_MARK = 1000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

export class ComponentServer implements ExternalExecutor {
  readonly #sock: Router;
  readonly #opts: Required<ComponentOptions>;
  readonly #external: Set<string>;
  readonly #registry: ProcessorRegistry;
  readonly #outbox: Array<[Buffer, Uint8Array]> = [];
  #sending = false;
  #closed = false;
  #ping: NodeJS.Timeout | null = null;
  #endpoint = '';
  readonly #client: ClientLink | undefined;
  /** Peers that sent a client message, and those cut off since (their messages are dropped until they send again). */
  readonly #clients = new Set<string>();
  readonly #cut = new Set<string>();

  constructor(opts: ComponentOptions, client?: ClientLink, onReport?: (r: ProcessorsReport) => void) {
    this.#opts = {
      processTimeoutMs: PROCESS_TIMEOUT_MS,
      internalErrorRetries: INTERNAL_ERROR_RETRIES,
      pingIntervalMs: PING_INTERVAL_MS,
      sendHighWaterMark: SEND_HIGH_WATER_MARK,
      ...opts,
    };
    this.#client = client;
    this.#registry = new ProcessorRegistry(
      this.#opts.processTimeoutMs,
      (id, kind, correlationId, content) => this.#send(id, kind, correlationId, content),
      onReport,
    );
    this.#external = new Set(opts.externalFamilies);
    this.#sock = new Router({
      mandatory: true,
      linger: 0,
      maxMessageSize: MAX_MESSAGE_BYTES,
      // A peer whose queue is full fails the send at once (EAGAIN) instead of holding up
      // every other peer's messages behind it.
      sendTimeout: 0,
      sendHighWaterMark: this.#opts.sendHighWaterMark,
      // Transport heartbeats close half-open connections; the close is then notified.
      heartbeatInterval: 5_000,
      heartbeatTimeout: 30_000,
    });
    // The option is not in zeromq's typed API: set it through the socket's raw setter.
    (this.#sock as unknown as { setInt32Option(o: number, v: number): void }).setInt32Option(ZMQ_ROUTER_NOTIFY, NOTIFY_CONNECT_AND_DISCONNECT);
  }

  /** tcp://host:port actually bound. */
  get endpoint(): string {
    return this.#endpoint;
  }

  async start(): Promise<string> {
    const m = /^(.+):(\d+)$/.exec(this.#opts.bind);
    const [, bare, port] = m ?? [];
    if (bare === undefined || port === undefined) throw new Error(`component bind: expected host:port, got "${this.#opts.bind}"`);
    const host = bare.includes(':') && !bare.startsWith('[') ? `[${bare}]` : bare;
    try {
      await this.#sock.bind(`tcp://${host}:${port}`);
    } catch (err) {
      this.#sock.close();
      throw new Error(
        `cannot listen on ${this.#opts.bind} for the transaction processor endpoint: ${err instanceof Error ? err.message : String(err)} ` +
          '(move it with --component-bind / CAIRN_COMPONENT_BIND, or turn it off with "off")',
      );
    }
    this.#endpoint = this.#sock.lastEndpoint ?? `tcp://${host}:${port}`;
    void this.#receive();
    this.#ping = setInterval(
      () => this.#registry.pingAll(),
      Math.min(this.#opts.pingIntervalMs, Math.max(1, Math.floor(this.#opts.processTimeoutMs / MAX_MISSED_PINGS))),
    );
    this.#ping.unref();
    return this.#endpoint;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ping) clearInterval(this.#ping);
    this.#registry.loseAll();
    this.#sock.close();
  }

  // ---- ExternalFamilies ----

  blockRoutes(base: StateReader): FamilyRoute {
    let allowed: Set<string> | null | undefined;
    return (name, version, native) => {
      if (allowed === undefined) allowed = readAllowed(base);
      if (allowed !== null && !allowed.has(familyKey(name, version))) {
        return { invalid: `Transaction family ${name} ${version} is not in ${TRANSACTION_FAMILIES_SETTING}` };
      }
      if (native && !this.#external.has(name)) return 'native';
      const key = familyKey(name, version);
      if (this.#registry.serves(key)) return 'external';
      const blocked = this.#registry.blocked(key);
      return blocked ? { unserved: `${name} ${version} (${blocked.why})` } : 'unserved';
    };
  }

  async process<C extends TxnContext>(txn: TxnInfo, headerBytes: Uint8Array, context: () => C): Promise<C> {
    const key = familyKey(txn.header.familyName, txn.header.familyVersion);
    const what = `${txn.header.familyName} ${txn.header.familyVersion}`;
    let internalErrors = 0;
    let lastInternal = '';
    for (;;) {
      if (this.#closed) throw new ExternalUnavailable(`${what} (the node is shutting down)`);
      const processor = this.#registry.pick(key);
      if (!processor) {
        const blocked = this.#registry.blocked(key);
        throw new ExternalUnavailable(blocked ? `${what} (${blocked.why})` : what);
      }
      const ctx = context();
      const answer = await this.#registry.request(processor, txn, headerBytes, ctx);
      if (answer === 'lost') continue; // gone or set aside: the next one of the family, or the batch waits
      if (answer.status === P.ProcessStatus.OK) return ctx;
      if (answer.status === P.ProcessStatus.INVALID_TRANSACTION) throw new InvalidTransaction(answer.message, answer.extendedData);
      // INTERNAL_ERROR (or a status this endpoint does not know): the transaction is not at
      // fault, so it is sent again, as the validator does.
      lastInternal = answer.message;
      if (++internalErrors > this.#opts.internalErrorRetries) {
        throw new ExternalUnavailable(`${what} (the processor answered INTERNAL_ERROR ${internalErrors} times: ${lastInternal})`);
      }
      await sleep(RETRY_BACKOFF_MS * 2 ** (internalErrors - 1));
    }
  }

  /** A processor went away: its families lose it and its requests go elsewhere. */
  #drop(idKey: string, why: string): void {
    if (this.#clients.delete(idKey)) {
      this.#cut.delete(idKey);
      this.#client?.gone(idKey, 'disconnected');
    }
    this.#registry.remove(idKey, why);
  }

  /** Sends an envelope the HTTP thread encoded to a client peer (dropped when it is gone or cut off). */
  sendTo(peer: string, body: Uint8Array): void {
    if (this.#closed || !this.#clients.has(peer) || this.#cut.has(peer)) return;
    this.#outbox.push([Buffer.from(peer, 'hex'), body]);
    if (!this.#sending) void this.#flush();
  }

  // ---- socket ----

  #send(id: Buffer, kind: number, correlationId: string, content: Uint8Array): void {
    if (this.#closed) return;
    this.#outbox.push([id, encode(P.Envelope, { messageType: kind, correlationId, content })]);
    if (!this.#sending) void this.#flush();
  }

  /** zeromq allows one send at a time: messages go out in order from this queue. */
  async #flush(): Promise<void> {
    this.#sending = true;
    for (let next = this.#outbox.shift(); next !== undefined && !this.#closed; next = this.#outbox.shift()) {
      const [id, bytes] = next;
      const idKey = id.toString('hex');
      if (this.#cut.has(idKey)) continue;
      try {
        await this.#sock.send([id, bytes]);
      } catch (err) {
        const code = (err as { code?: string }).code ?? String(err);
        if (code === 'EAGAIN' && this.#clients.has(idKey) && !this.#registry.get(idKey)?.families.size) {
          // A client that does not read: its messages stop, the socket and everyone else go on.
          this.#cut.add(idKey);
          log.warn(`component endpoint: client ${idKey.slice(0, 12)} cut off: it stopped reading (${this.#opts.sendHighWaterMark} messages queued)`);
          this.#client?.gone(idKey, 'cut off');
          continue;
        }
        // EHOSTUNREACH: the peer is gone (ROUTER mandatory); anything else, the same for us.
        this.#drop(idKey, `is unreachable (${code})`);
      }
    }
    this.#sending = false;
  }

  async #receive(): Promise<void> {
    try {
      for await (const frames of this.#sock) {
        try {
          this.#onFrames(frames);
        } catch (err) {
          // A message this endpoint cannot handle is dropped; the socket and the node go on.
          log.debug(`component endpoint: message dropped: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    } catch (err) {
      if (!this.#closed) log.error(`component endpoint stopped receiving: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  #onFrames(frames: Buffer[]): void {
    const [id, body] = frames;
    if (id === undefined || body === undefined || frames.length !== 2) return;
    const idKey = id.toString('hex');
    if (body.length === 0) {
      // ZMQ_ROUTER_NOTIFY: the first empty message is the connect, the next the disconnect.
      if (this.#registry.get(idKey)) this.#drop(idKey, 'disconnected');
      else this.#registry.add(id, idKey);
      return;
    }
    const env = P.Envelope.decode(body) as unknown as P.EnvelopeMsg;
    const processor = this.#registry.get(idKey) ?? this.#registry.add(id, idKey);
    // Anything it says shows its socket is alive.
    processor.pingsUnanswered = 0;
    if (processor.setAside?.cause === 'pings') this.#registry.revive(processor, 'answers again');
    const reply = (kind: number, type: typeof P.Envelope, msg: object): void => this.#send(id, kind, env.correlationId, encode(type, msg));
    const K = P.Kind;
    if (isClientType(env.messageType) && this.#client) {
      this.#clients.add(idKey);
      // Sending again is reading again: a peer cut off may subscribe anew.
      this.#cut.delete(idKey);
      this.#client.message(idKey, body);
      return;
    }
    switch (env.messageType) {
      case K.TP_REGISTER_REQUEST: {
        const m = P.RegisterRequest.decode(env.content) as unknown as P.RegisterRequestMsg;
        // The version asked for is echoed, as the validator does (the Python SDK asks for 0
        // and leaves on any other answer); one above what this endpoint speaks is refused.
        if (m.protocolVersion > MAX_PROCESSOR_PROTOCOL_VERSION) {
          log.warn(
            `transaction processor ${processor.key} asked for protocol version ${m.protocolVersion}; ${MAX_PROCESSOR_PROTOCOL_VERSION} is the highest served`,
          );
          return reply(K.TP_REGISTER_RESPONSE, P.RegisterResponse, { status: P.AckStatus.ERROR, protocolVersion: MAX_PROCESSOR_PROTOCOL_VERSION });
        }
        return this.#registry.register(processor, m, (ok) =>
          reply(K.TP_REGISTER_RESPONSE, P.RegisterResponse, { status: ok ? P.AckStatus.OK : P.AckStatus.ERROR, protocolVersion: m.protocolVersion }),
        );
      }
      case K.TP_UNREGISTER_REQUEST:
        this.#registry.withdraw(processor);
        return reply(K.TP_UNREGISTER_RESPONSE, P.UnregisterResponse, { status: P.AckStatus.OK });
      case K.TP_PROCESS_RESPONSE:
        return this.#registry.answered(processor, env.correlationId, env.content);
      case K.TP_STATE_GET_REQUEST: {
        const m = P.StateGetRequest.decode(env.content) as unknown as P.ContextAddressesMsg;
        return reply(K.TP_STATE_GET_RESPONSE, P.StateGetResponse, stateGet(this.#registry.context(processor, m.contextId), m));
      }
      case K.TP_STATE_SET_REQUEST: {
        const m = P.StateSetRequest.decode(env.content) as unknown as P.StateSetRequestMsg;
        return reply(K.TP_STATE_SET_RESPONSE, P.StateSetResponse, stateSet(this.#registry.context(processor, m.contextId), m));
      }
      case K.TP_STATE_DELETE_REQUEST: {
        const m = P.StateDeleteRequest.decode(env.content) as unknown as P.ContextAddressesMsg;
        return reply(K.TP_STATE_DELETE_RESPONSE, P.StateDeleteResponse, stateDelete(this.#registry.context(processor, m.contextId), m));
      }
      case K.TP_RECEIPT_ADD_DATA_REQUEST: {
        const m = P.ReceiptAddDataRequest.decode(env.content) as unknown as P.ReceiptAddDataRequestMsg;
        return reply(K.TP_RECEIPT_ADD_DATA_RESPONSE, P.ReceiptAddDataResponse, receiptAddData(this.#registry.context(processor, m.contextId), m));
      }
      case K.TP_EVENT_ADD_REQUEST: {
        const m = P.EventAddRequest.decode(env.content) as unknown as P.EventAddRequestMsg;
        return reply(K.TP_EVENT_ADD_RESPONSE, P.EventAddResponse, eventAdd(this.#registry.context(processor, m.contextId), m, processor.key));
      }
      case K.PING_REQUEST:
        return reply(K.PING_RESPONSE, P.PingResponse, {});
      case K.PING_RESPONSE:
        return;
      default:
        log.debug(`component endpoint: message type ${env.messageType} from ${processor.key} not served`);
        // Answered, never left unanswered (a request's sender would wait for ever); answers are not.
        if (!isAnswerType(env.messageType)) reply(K.NETWORK_ACK, P.NetworkAcknowledgement, { status: P.AckStatus.ERROR });
    }
  }
}

declare module '../ledger/protocol.js' {
  interface PluginOptions {
    /** The component endpoint for transaction processors; absent: none. */
    component: ComponentOptions;
  }
}

registerExecutor('component', (opts, post) =>
  opts.component
    ? new ComponentServer(
        opts.component,
        {
          message: (peer, body) => post({ type: 'client', peer, body }),
          gone: (peer, why) => post({ type: 'client-gone', peer, why }),
        },
        (report) => post({ type: 'processors', report }),
      )
    : null,
);
