/**
 * A transaction processor for the tests, written against the validator protocol as a
 * Sawtooth SDK processor is: a ZeroMQ DEALER socket exchanging `Message` envelopes, encoded
 * with the sawtooth-sdk package's own protobuf definitions (not Cairn's), so the bytes on
 * the wire are checked against upstream's .proto files.
 *
 * Its family ("tally" by default) keeps a decimal counter per key. The payload is JSON:
 *   {"op":"add","key":k,"n":x}    get, add x, set; an event "tally/added" and receipt data
 *                                 ("pad":b makes the event's data b bytes long)
 *   {"op":"del","key":k}          delete the key
 *   {"op":"invalid","key":k}      INVALID_TRANSACTION with a message
 *   {"op":"outside","key":k}      get an address outside the inputs: the endpoint answers
 *                                 AUTHORIZATION_ERROR, and the processor answers INVALID_TRANSACTION
 *                                 naming it, as the SDKs do
 * Hooks let a test make it answer INTERNAL_ERROR, or vanish while it holds a transaction.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Dealer } from 'zeromq';
import protobuf from 'protobufjs';
import type { TxnSpec } from '../../src/ledger/build.js';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const pb: any = require('sawtooth-sdk/protobuf');
const MT = pb.Message.MessageType;
// The SDK package's .proto predates protocol_version and the header style (TpRegisterRequest
// fields 6 and 7) and TpProcessRequest.header_bytes (field 5): those are declared here by number.
const HeaderStyleField = new protobuf.Type('HeaderStyle')
  .add(new protobuf.Field('protocolVersion', 6, 'uint32'))
  .add(new protobuf.Field('requestHeaderStyle', 7, 'uint32'));
// TpRegisterResponse.protocol_version (field 2), likewise.
const ProtocolVersionField = new protobuf.Type('ProtocolVersion').add(new protobuf.Field('protocolVersion', 2, 'uint32'));
const HeaderBytesField = new protobuf.Type('HeaderBytes').add(new protobuf.Field('headerBytes', 5, 'bytes'));

export const TALLY = 'tally';
export const tallyPrefix = (family = TALLY): string => createHash('sha512').update(family).digest('hex').slice(0, 6);
export const tallyAddress = (key: string, family = TALLY): string =>
  tallyPrefix(family) + createHash('sha512').update(key).digest('hex').slice(0, 64);

/** A transaction of the processor's family (inputs and outputs: the key's address, unless given). */
export function tallySpec(payload: Record<string, unknown>, extra: Partial<TxnSpec> = {}, family = TALLY): TxnSpec {
  const address = tallyAddress(String(payload.key), family);
  return {
    familyName: family,
    familyVersion: '1.0',
    inputs: [address],
    outputs: [address],
    payload: Buffer.from(JSON.stringify(payload)),
    ...extra,
  };
}

export interface ProcessInfo {
  signature: string;
  payload: Record<string, unknown>;
  /** How many process requests for this transaction this processor has seen. */
  attempt: number;
  /** header_bytes of the request (processors registered with the RAW header style). */
  headerBytes: Buffer;
  /** Whether the expanded header was sent. */
  expanded: boolean;
}

export interface ProcessorOptions {
  family?: string;
  version?: string;
  /** Register with the RAW header style (header_bytes instead of the expanded header). */
  raw?: boolean;
  /** TpRegisterRequest.protocol_version (1 by default; the Python SDK sends 0). */
  protocolVersion?: number;
  /** Whether it answers the endpoint's pings (true; false: a processor whose socket thread is stuck). */
  answerPings?: boolean;
  /**
   * Before processing: return 'internal' to answer INTERNAL_ERROR, 'vanish' to close the
   * socket without answering, or nothing to process normally.
   */
  before?(info: ProcessInfo): Hook | Promise<Hook>;
}

/** 'ok' answers OK without touching state. */
type Hook = 'internal' | 'vanish' | 'ok' | undefined;

export class TestProcessor {
  readonly sock = new Dealer({ linger: 0 });
  readonly received: ProcessInfo[] = [];
  /** Statuses the endpoint answered to this processor's state requests. */
  readonly stateStatuses: number[] = [];
  readonly #replies = new Map<string, (m: { type: number; content: Buffer }) => void>();
  readonly #attempts = new Map<string, number>();
  #sendChain: Promise<void> = Promise.resolve();
  closed = false;
  readonly family: string;
  /** Context and correlation ids of the last process request received. */
  lastContextId = '';
  /** protocol_version of the last registration answer. */
  registeredVersion = -1;
  lastCorrelationId = '';
  /** Pings received from the endpoint. */
  pings = 0;

  constructor(
    readonly endpoint: string,
    readonly opts: ProcessorOptions = {},
  ) {
    this.family = opts.family ?? TALLY;
  }

  /** Connects and registers; resolves with the registration's status. */
  /** Connects and reads replies, without registering. */
  connect(): void {
    this.sock.connect(this.endpoint);
    void this.#loop();
  }

  async start(): Promise<number> {
    this.connect();
    return this.register();
  }

  /** Registers (again) on the connection it has; resolves with the registration's status. */
  async register(): Promise<number> {
    const register = Buffer.from(
      pb.TpRegisterRequest.encode({
        family: this.family,
        version: this.opts.version ?? '1.0',
        namespaces: [tallyPrefix(this.family)],
        maxOccupancy: 1,
      }).finish(),
    );
    const style = HeaderStyleField.encode({ protocolVersion: this.opts.protocolVersion ?? 1, requestHeaderStyle: this.opts.raw ? 2 : 1 }).finish();
    const reply = await this.request(MT.TP_REGISTER_REQUEST, Buffer.concat([register, style]));
    const answer = pb.TpRegisterResponse.decode(reply.content);
    this.registeredVersion = (ProtocolVersionField.decode(reply.content) as unknown as { protocolVersion: number }).protocolVersion;
    return answer.status as number;
  }

  async unregister(): Promise<number> {
    const reply = await this.request(MT.TP_UNREGISTER_REQUEST, pb.TpUnregisterRequest.encode({}).finish());
    return pb.TpUnregisterResponse.decode(reply.content).status as number;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sock.close();
  }

  /** Sends raw frames (for the hostile-input tests). */
  async sendRaw(frames: Buffer | Buffer[]): Promise<void> {
    await this.#enqueue(frames);
  }

  send(type: number, correlationId: string, content: Uint8Array): Promise<void> {
    return this.#enqueue(Buffer.from(pb.Message.encode({ messageType: type, correlationId, content }).finish()));
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
    await this.send(type, correlationId, content);
    return reply;
  }

  #enqueue(frames: Buffer | Buffer[]): Promise<void> {
    // zeromq allows one send at a time on a socket.
    this.#sendChain = this.#sendChain.then(() => (this.closed ? undefined : this.sock.send(frames)));
    return this.#sendChain;
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
        } else if (msg.messageType === MT.TP_PROCESS_REQUEST) {
          const req = pb.TpProcessRequest.decode(msg.content);
          req.raw = msg.content;
          void this.#process(msg.correlationId, req);
        } else if (msg.messageType === MT.PING_REQUEST) {
          this.pings++;
          if (this.opts.answerPings === false) continue;
          void this.send(MT.PING_RESPONSE, msg.correlationId, pb.PingResponse.encode({}).finish());
        }
      }
    } catch {
      // closed
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async #process(correlationId: string, req: any): Promise<void> {
    let payload: Record<string, unknown> = {};
    try {
      payload = JSON.parse(Buffer.from(req.payload).toString()) as Record<string, unknown>;
    } catch {
      // another family's payload (a test that serves a built-in family answers through `before`)
    }
    const attempt = (this.#attempts.get(req.signature) ?? 0) + 1;
    this.#attempts.set(req.signature, attempt);
    const { headerBytes } = HeaderBytesField.decode(req.raw) as unknown as { headerBytes: Uint8Array };
    const info = {
      signature: req.signature as string,
      payload,
      attempt,
      headerBytes: Buffer.from(headerBytes),
      expanded: req.header !== null && req.header !== undefined,
    };
    this.lastContextId = req.contextId as string;
    this.lastCorrelationId = correlationId;
    this.received.push(info);
    const respond = (status: number, message = '', extendedData = Buffer.alloc(0)): Promise<void> =>
      this.send(MT.TP_PROCESS_RESPONSE, correlationId, pb.TpProcessResponse.encode({ status, message, extendedData }).finish());
    const S = pb.TpProcessResponse.Status;
    const hook = await this.opts.before?.(info);
    if (hook === 'vanish') return this.close();
    if (hook === 'internal') return respond(S.INTERNAL_ERROR, 'the processor is not ready');
    if (hook === 'ok') return respond(S.OK);
    const ctx = req.contextId as string;
    const key = String(payload.key);
    const address = tallyAddress(key, this.family);
    try {
      if (payload.op === 'invalid') return respond(S.INVALID_TRANSACTION, `tally refuses ${key}`, Buffer.from('details'));
      if (payload.op === 'outside') {
        await this.getState(ctx, [tallyAddress(`${key}-elsewhere`, this.family)]);
        return respond(S.OK);
      }
      if (payload.op === 'del') {
        await this.#call(
          MT.TP_STATE_DELETE_REQUEST,
          pb.TpStateDeleteRequest.encode({ contextId: ctx, addresses: [address] }).finish(),
          pb.TpStateDeleteResponse,
        );
        return respond(S.OK);
      }
      const entries = await this.getState(ctx, [address]);
      const before = entries.length > 0 ? Number(Buffer.from(entries[0].data).toString()) : 0;
      const after = before + Number(payload.n ?? 1);
      await this.#call(
        MT.TP_STATE_SET_REQUEST,
        pb.TpStateSetRequest.encode({ contextId: ctx, entries: [{ address, data: Buffer.from(String(after)) }] }).finish(),
        pb.TpStateSetResponse,
      );
      await this.#call(
        MT.TP_EVENT_ADD_REQUEST,
        pb.TpEventAddRequest.encode({
          contextId: ctx,
          event: {
            eventType: 'tally/added',
            attributes: [{ key: 'key', value: key }],
            data: Buffer.from(String(after).padEnd(Number(payload.pad ?? 0), ' ')),
          },
        }).finish(),
        pb.TpEventAddResponse,
      );
      await this.#call(
        MT.TP_RECEIPT_ADD_DATA_REQUEST,
        pb.TpReceiptAddDataRequest.encode({ contextId: ctx, data: Buffer.from(`${key}: ${before} -> ${after}`) }).finish(),
        pb.TpReceiptAddDataResponse,
      );
      return respond(S.OK);
    } catch (err) {
      // As the SDKs do: an authorization error from the validator makes the transaction invalid.
      return respond(S.INVALID_TRANSACTION, err instanceof Error ? err.message : String(err));
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async getState(contextId: string, addresses: string[]): Promise<any[]> {
    const r = await this.#call(MT.TP_STATE_GET_REQUEST, pb.TpStateGetRequest.encode({ contextId, addresses }).finish(), pb.TpStateGetResponse);
    return r.entries;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async #call(type: number, content: Uint8Array, responseType: any): Promise<any> {
    const reply = await this.request(type, content);
    const r = responseType.decode(reply.content);
    this.stateStatuses.push(r.status);
    if (r.status !== 1) throw new Error(`Tried to access an unauthorized address (status ${r.status} for message type ${type})`);
    return r;
  }
}
