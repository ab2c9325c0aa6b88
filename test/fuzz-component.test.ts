/**
 * Fuzzing the component endpoint (the validator's ZeroMQ port, src/component/server.ts) of one
 * running node, in rounds of bounded time and count. Every round sends, from several sockets:
 *  - random and mutated `Message` envelopes of every type: the processor messages (register,
 *    unregister, process response, state get / set / delete, receipt data, event add, ping),
 *    the client messages 100-130 and 500-506, the answers among them that nobody asked for,
 *    types the endpoint does not know;
 *  - valid envelopes with hostile contents: wrong correlation ids, contexts that are not the
 *    sender's (a transaction's context on the honest processor included), huge repeated fields,
 *    another message type's content, truncated protobuf;
 *  - frames that are not one envelope: extra frames, empty frames, random bytes;
 *  - the same message again, many times.
 * A hostile processor registered for a family of its own gets that family's transactions and
 * answers each with a burst of such messages around its answer (answered again after, out of
 * order). While the honest processor holds a transaction, the hostile sockets aim a burst at
 * its context and its correlation id.
 * After each round: GET /status answers, a signed intkey batch commits, the honest processor's
 * transaction commits with exactly its own writes, events and receipt data, the hostile
 * family's transaction is settled, a ZeroMQ client's requests are answered, every hostile
 * socket still gets its pings answered, and a new processor can register.
 *
 * Seed, time and replay: test/helpers/fuzz.ts (FUZZ_SEED=<seed printed in the comments>).
 */
import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Dealer } from 'zeromq';
import { startTestNode, type TestNode } from './helpers/node.js';
import { batchList, buildBatch, buildTransaction, getJson, intkeyBatch, newSigner, postBatches, waitCommitted } from './helpers/batches.js';
import { TestProcessor, tallyAddress, tallySpec } from './helpers/processor.js';
import { ZmqClient } from './helpers/zmq-client.js';
import { FUZZ_MS, Rng, SEED, forAWhile, within } from './helpers/fuzz.js';
import { Transaction, decode, encode } from '../src/proto/index.js';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const pb: any = require('sawtooth-sdk/protobuf');
const MT = pb.Message.MessageType;

const ROUNDS = 4;
/** Messages one round sends at most (the time bound usually comes first). */
const ROUND_MAX = 4000;
/** The hostile processor's own family. */
const FUZZ_FAMILY = 'fuzzfam';
const fuzzPrefix = createHash('sha512').update(FUZZ_FAMILY).digest('hex').slice(0, 6);

/** A socket of the fuzzer: sends envelopes and raw frames, reads everything, answers pings. */
class Peer {
  readonly sock = new Dealer({ linger: 0, sendHighWaterMark: 10_000 });
  /** Messages received, by type. */
  readonly received = new Map<number, number>();
  readonly #waiters = new Map<string, (m: { type: number; content: Buffer }) => void>();
  #chain: Promise<void> = Promise.resolve();
  closed = false;
  onProcess: ((correlationId: string, req: any) => void) | null = null;

  constructor(
    readonly name: string,
    endpoint: string,
  ) {
    this.sock.connect(endpoint);
    void this.#loop();
  }

  sendRaw(frames: Buffer | Buffer[]): Promise<void> {
    this.#chain = this.#chain.then(() => (this.closed ? undefined : this.sock.send(frames))).catch(() => undefined);
    return this.#chain;
  }

  send(type: number, correlationId: string, content: Uint8Array): Promise<void> {
    return this.sendRaw(Buffer.from(pb.Message.encode({ messageType: type, correlationId, content }).finish()));
  }

  async request(type: number, content: Uint8Array, ms = 15_000): Promise<{ type: number; content: Buffer }> {
    const correlationId = randomBytes(16).toString('hex');
    const reply = new Promise<{ type: number; content: Buffer }>((resolve) => this.#waiters.set(correlationId, resolve));
    await this.send(type, correlationId, content);
    return within(`${this.name}: the answer to message type ${type}`, reply, ms).finally(() => this.#waiters.delete(correlationId));
  }

  /** Registers for a family; resolves with the status. */
  async register(family: string, raw: boolean, protocolVersion: number): Promise<number> {
    const body = pb.TpRegisterRequest.encode({ family, version: '1.0', namespaces: [fuzzPrefix], maxOccupancy: 1 }).finish();
    // protocol_version (6) and request_header_style (7), which the SDK's .proto predates.
    const extra = Buffer.from([0x30, protocolVersion, 0x38, raw ? 2 : 1]);
    const r = await this.request(MT.TP_REGISTER_REQUEST, Buffer.concat([body, extra]));
    return pb.TpRegisterResponse.decode(r.content).status as number;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sock.close();
  }

  async #loop(): Promise<void> {
    try {
      for await (const [frame] of this.sock) {
        if (frame === undefined) continue;
        let msg: { messageType: number; correlationId: string; content: Uint8Array };
        try {
          msg = pb.Message.decode(frame);
        } catch {
          this.received.set(-1, (this.received.get(-1) ?? 0) + 1);
          continue;
        }
        this.received.set(msg.messageType, (this.received.get(msg.messageType) ?? 0) + 1);
        const waiter = this.#waiters.get(msg.correlationId);
        if (waiter) {
          this.#waiters.delete(msg.correlationId);
          waiter({ type: msg.messageType, content: Buffer.from(msg.content) });
        } else if (msg.messageType === MT.PING_REQUEST) {
          void this.send(MT.PING_RESPONSE, msg.correlationId, pb.PingResponse.encode({}).finish());
        } else if (msg.messageType === MT.TP_PROCESS_REQUEST && this.onProcess) {
          this.onProcess(msg.correlationId, pb.TpProcessRequest.decode(msg.content));
        }
      }
    } catch {
      // closed
    }
  }
}

let n: TestNode;
let endpoint = '';
let honest: TestProcessor;
let hostile: Peer;
const noise: Peer[] = [];
let client: ZmqClient;
const signer = newSigner();
/** Ids the node knows (blocks, batches, transactions): requests about them reach further in. */
const known = { blocks: [] as string[], batches: [] as string[], txns: [] as string[] };
/** Contexts and correlation ids seen: the hostile's own (old ones included) and the honest processor's. */
const seen = { contexts: [] as string[], correlations: [] as string[] };
let tallyTotal = 0;
const failures: string[] = [];
const counts: Record<string, number> = Object.create(null) as Record<string, number>;
const count = (what: string): void => {
  counts[what] = (counts[what] ?? 0) + 1;
};

// ---- what the fuzzer sends ----

function address(r: Rng): string {
  switch (r.int(7)) {
    case 0:
      return tallyAddress(`k${r.int(4)}`);
    case 1:
      return fuzzPrefix + r.hex(64);
    case 2:
      return r.hex(70);
    case 3:
      return fuzzPrefix;
    case 4:
      return r.hex(r.pick([0, 1, 6, 69, 71, 140]));
    default:
      return r.string();
  }
}

/** A few addresses, or now and then a huge repeated field (one address many times: the fuzzer's own cost stays small). */
function addresses(r: Rng): string[] {
  if (r.chance(0.03)) return new Array<string>(r.pick([10_000, 50_000])).fill(r.pick([fuzzPrefix + r.hex(64), tallyAddress('k0'), r.hex(70)]));
  return Array.from({ length: r.int(5) }, () => address(r));
}

/** `len` copies of one short value (a huge repeated field). */
const many = <T>(len: number, one: T): T[] => new Array<T>(len).fill(one);

function contextId(r: Rng): string {
  if (seen.contexts.length > 0 && r.chance(0.6)) return r.pick(seen.contexts);
  return r.chance(0.5) ? r.hex(32) : r.string();
}

function correlationId(r: Rng): string {
  if (seen.correlations.length > 0 && r.chance(0.4)) return r.pick(seen.correlations);
  return r.chance(0.7) ? r.hex(32) : r.string();
}

function data(r: Rng): Buffer {
  return r.bytes(r.chance(0.02) ? 1024 * 1024 : r.pick([0, 1, 8, 100, 4096]));
}

function blockId(r: Rng): string {
  const pool = [...known.blocks, ...known.batches, ...known.txns];
  if (pool.length > 0 && r.chance(0.5)) return r.pick(pool);
  return r.chance(0.5) ? r.hex(128) : r.string();
}

/**
 * Filters. The REGEX ones are patterns without nested quantifiers: a backtracking pattern on
 * `block_id` stalls the node today (issue 44, fixed apart with its own test); the fuzzer
 * is no place to wait for that.
 */
const LINEAR_PATTERNS = ['.*', '^1cf126', '[0-9a-f]+$', '(', '[', '\\', 'a{2,3}', '(?<n>x)', '^$', '\\d+', '(a|b)c', '.', '\\p{L}', ''];

function subscriptions(r: Rng): object[] {
  const len = r.chance(0.05) ? r.pick([65, 200]) : r.int(4);
  return Array.from({ length: len }, () => ({
    eventType: r.pick(['sawtooth/block-commit', 'sawtooth/state-delta', 'tally/added', '', r.string()]),
    filters: Array.from({ length: r.chance(0.05) ? 17 : r.int(3) }, () => {
      const filterType = r.pick([0, 1, 2, 3, 4, 5, 99]);
      return {
        key: r.pick(['block_id', 'block_num', 'address', 'key', r.string()]),
        matchString: filterType >= 3 && filterType <= 4 ? r.pick(LINEAR_PATTERNS) : r.chance(0.3) ? blockId(r) : r.string(),
        filterType,
      };
    }),
  }));
}

function paging(r: Rng): object | undefined {
  if (r.chance(0.3)) return undefined;
  return { start: r.chance(0.3) ? blockId(r) : r.pick(['', '0x0000000000000001', '0x', 'zz', r.string()]), limit: r.number() };
}

function sorting(r: Rng): object[] {
  return Array.from({ length: r.int(3) }, () => ({
    keys: Array.from({ length: r.int(3) }, () => r.pick(['default', 'block_num', r.string()])),
    reverse: r.chance(0.5),
  }));
}

/** A valid BatchList (a fresh intkey batch, or the same one again), for submits to mutate. */
function batchListBytes(r: Rng): Buffer {
  return batchList(intkeyBatch(signer, [['set', `fz${r.int(20)}`, r.int(1000)]]));
}

/** The content of a message of `type`, well formed for its type, with hostile values. */
function content(r: Rng, type: number): Buffer {
  const enc = (T: any, o: object): Buffer => Buffer.from(T.encode(T.fromObject(o)).finish());
  switch (type) {
    case MT.TP_REGISTER_REQUEST: {
      const family = r.pick([`noise-${r.int(8)}`, '', r.string(), 'x'.repeat(257)]);
      const body = enc(pb.TpRegisterRequest, {
        family,
        version: r.pick(['1.0', '', r.string()]),
        namespaces: r.chance(0.05) ? many(20_000, r.hex(6)) : Array.from({ length: r.int(3) }, () => r.pick([fuzzPrefix, r.hex(6), r.string()])),
        maxOccupancy: r.number() >>> 0,
      });
      return Buffer.concat([body, Buffer.from([0x30, r.int(256) & 0x7f, 0x38, r.int(4)])]);
    }
    case MT.TP_PROCESS_RESPONSE:
      return enc(pb.TpProcessResponse, { status: r.pick([0, 1, 2, 3, 4, 99]), message: r.string(), extendedData: data(r) });
    case MT.TP_STATE_GET_REQUEST:
      return enc(pb.TpStateGetRequest, { contextId: contextId(r), addresses: addresses(r) });
    case MT.TP_STATE_SET_REQUEST: {
      // One value for all: a huge repeated field must not be a huge amount of random bytes to
      // make, nor (a megabyte value for 10,000 addresses) a message of gigabytes to encode.
      const value = data(r);
      const list = addresses(r);
      const one = list.length * value.length > 16 * 1024 * 1024 ? value.subarray(0, 64) : value;
      return enc(pb.TpStateSetRequest, { contextId: contextId(r), entries: list.map((a) => ({ address: a, data: one })) });
    }
    case MT.TP_STATE_DELETE_REQUEST:
      return enc(pb.TpStateDeleteRequest, { contextId: contextId(r), addresses: addresses(r) });
    case MT.TP_RECEIPT_ADD_DATA_REQUEST:
      return enc(pb.TpReceiptAddDataRequest, { contextId: contextId(r), data: data(r) });
    case MT.TP_EVENT_ADD_REQUEST:
      return enc(pb.TpEventAddRequest, {
        contextId: contextId(r),
        event: r.chance(0.1)
          ? undefined
          : {
              eventType: r.pick(['tally/added', 'sawtooth/block-commit', '', r.string()]),
              attributes: r.chance(0.03)
                ? many(10_000, { key: 'key', value: r.hex(64) })
                : Array.from({ length: r.int(4) }, () => ({ key: r.string(), value: r.string() })),
              data: data(r),
            },
      });
    case MT.CLIENT_BATCH_SUBMIT_REQUEST:
      return r.chance(0.5) ? r.mutate(batchListBytes(r)) : batchListBytes(r);
    case MT.CLIENT_BLOCK_LIST_REQUEST:
    case MT.CLIENT_BATCH_LIST_REQUEST:
    case MT.CLIENT_TRANSACTION_LIST_REQUEST: {
      const T =
        type === MT.CLIENT_BLOCK_LIST_REQUEST
          ? pb.ClientBlockListRequest
          : type === MT.CLIENT_BATCH_LIST_REQUEST
            ? pb.ClientBatchListRequest
            : pb.ClientTransactionListRequest;
      const ids = r.chance(0.03) ? many(5000, blockId(r)) : Array.from({ length: r.int(3) }, () => blockId(r));
      return enc(T, {
        headId: r.chance(0.6) ? '' : blockId(r),
        blockIds: ids,
        batchIds: ids,
        transactionIds: ids,
        paging: paging(r),
        sorting: sorting(r),
      });
    }
    case MT.CLIENT_BLOCK_GET_BY_ID_REQUEST:
      return enc(pb.ClientBlockGetByIdRequest, { blockId: blockId(r) });
    case MT.CLIENT_BATCH_GET_REQUEST:
      return enc(pb.ClientBatchGetRequest, { batchId: blockId(r) });
    case MT.CLIENT_TRANSACTION_GET_REQUEST:
      return enc(pb.ClientTransactionGetRequest, { transactionId: blockId(r) });
    case MT.CLIENT_BLOCK_GET_BY_TRANSACTION_ID_REQUEST:
      return enc(pb.ClientBlockGetByTransactionIdRequest, { transactionId: blockId(r) });
    case MT.CLIENT_BLOCK_GET_BY_BATCH_ID_REQUEST:
      return enc(pb.ClientBlockGetByBatchIdRequest, { batchId: blockId(r) });
    case MT.CLIENT_BLOCK_GET_BY_NUM_REQUEST:
      return enc(pb.ClientBlockGetByNumRequest, { blockNum: r.pick([0, 1, 2, 3, 2 ** 32, 2 ** 53 - 1, 4294967295]) });
    case MT.CLIENT_STATE_LIST_REQUEST:
      return enc(pb.ClientStateListRequest, {
        stateRoot: r.chance(0.6) ? '' : r.pick([r.hex(64), r.string()]),
        address: r.pick(['', fuzzPrefix, address(r)]),
        paging: paging(r),
        sorting: sorting(r),
      });
    case MT.CLIENT_STATE_GET_REQUEST:
      return enc(pb.ClientStateGetRequest, { stateRoot: r.chance(0.6) ? '' : r.pick([r.hex(64), r.string()]), address: address(r) });
    case MT.CLIENT_BATCH_STATUS_REQUEST:
      // A wait is kept short: a long one only holds a waiter (bounded waits are another test's).
      return enc(pb.ClientBatchStatusRequest, {
        batchIds: r.chance(0.03) ? many(r.pick([1000, 1001]), r.hex(128)) : Array.from({ length: r.int(4) }, () => blockId(r)),
        wait: r.chance(0.3),
        timeout: r.pick([1, 2]),
      });
    case MT.CLIENT_RECEIPT_GET_REQUEST:
      return enc(pb.ClientReceiptGetRequest, {
        transactionIds: r.chance(0.03) ? many(1001, r.hex(128)) : Array.from({ length: r.int(4) }, () => blockId(r)),
      });
    case MT.CLIENT_EVENTS_SUBSCRIBE_REQUEST:
      return enc(pb.ClientEventsSubscribeRequest, {
        subscriptions: subscriptions(r),
        lastKnownBlockIds: r.chance(0.03) ? many(300, r.hex(128)) : Array.from({ length: r.int(3) }, () => r.pick(['0000000000000000', blockId(r)])),
      });
    case MT.CLIENT_EVENTS_GET_REQUEST:
      return enc(pb.ClientEventsGetRequest, {
        subscriptions: subscriptions(r),
        blockIds: r.chance(0.03) ? many(257, r.hex(128)) : Array.from({ length: r.int(3) }, () => blockId(r)),
      });
    default:
      // Requests without fields (unregister, peers, status, ping, unsubscribe), answers, unknown types.
      return r.chance(0.7) ? Buffer.alloc(0) : r.bytes(r.int(64));
  }
}

const PROCESSOR_TYPES = [1, 3, 6, 7, 9, 11, 13, 15, 700];
const CLIENT_TYPES = [100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 125, 127, 128, 129, 500, 502, 505];
/** Answers nobody asked for, and types the endpoint does not serve. */
const STRAY_TYPES = [
  0,
  2,
  4,
  5,
  8,
  10,
  12,
  14,
  16,
  17,
  101,
  103,
  105,
  121,
  126,
  130,
  131,
  200,
  300,
  301,
  501,
  503,
  504,
  506,
  507,
  600,
  701,
  800,
  999,
  2 ** 31 - 1,
];

/**
 * One fuzz message from `p`. The hostile processor's own (`keep`) leave out what would end its
 * registration (an unregister, an empty frame that reads as its disconnect): its family's
 * transaction would then wait for a processor until the next round.
 */
async function fuzzOne(r: Rng, p: Peer, keep = false): Promise<void> {
  const roll = r.int(100);
  if (roll < 8 && !keep) {
    // Frames that are not one envelope.
    count('raw frames');
    const valid = Buffer.from(pb.Message.encode({ messageType: MT.PING_REQUEST, correlationId: r.hex(8), content: Buffer.alloc(0) }).finish());
    switch (r.int(5)) {
      case 0:
        return p.sendRaw([valid, valid]);
      case 1:
        // An empty frame reads as a connect or disconnect notice: only this socket's own state may change.
        return p.sendRaw(Buffer.alloc(0));
      case 2:
        return p.sendRaw([Buffer.alloc(0), valid, r.bytes(10)]);
      case 3:
        return p.sendRaw(r.bytes(1 + r.int(2000)));
      default:
        return p.sendRaw(r.mutate(valid));
    }
  }
  const picked = roll < 45 ? r.pick(PROCESSOR_TYPES) : roll < 85 ? r.pick(CLIENT_TYPES) : r.pick(STRAY_TYPES);
  const type = keep && picked === MT.TP_UNREGISTER_REQUEST ? MT.PING_REQUEST : picked;
  count(roll < 45 ? 'processor types' : roll < 85 ? 'client types' : 'stray types');
  // Another type's content (a wrong type), a mutated or truncated one, or its own.
  const how = r.int(10);
  const body = how === 0 ? content(r, r.pick([...PROCESSOR_TYPES, ...CLIENT_TYPES])) : how === 1 ? r.mutate(content(r, type)) : content(r, type);
  const corr = correlationId(r);
  const envelope = Buffer.from(pb.Message.encode({ messageType: type, correlationId: corr, content: body }).finish());
  const sent = how === 2 ? envelope.subarray(0, r.int(envelope.length)) : envelope;
  const times = r.chance(0.05) ? 2 + r.int(50) : 1;
  for (let i = 0; i < times; i++) await p.sendRaw(sent);
}

/** The hostile processor's answer to a transaction of its family: a burst around it, the answer, then more. */
function hostileProcess(r: Rng, correlationId: string, req: any): void {
  const ctx = req.contextId as string;
  seen.contexts.push(ctx);
  seen.correlations.push(correlationId);
  void (async (): Promise<void> => {
    for (let i = 0, k = r.int(12); i < k; i++) {
      if (r.chance(0.5)) {
        // A state call in its own context (allowed addresses, and others).
        const type = r.pick([
          MT.TP_STATE_GET_REQUEST,
          MT.TP_STATE_SET_REQUEST,
          MT.TP_STATE_DELETE_REQUEST,
          MT.TP_EVENT_ADD_REQUEST,
          MT.TP_RECEIPT_ADD_DATA_REQUEST,
        ]);
        const own = Buffer.from(pb.Message.encode({ messageType: type, correlationId: r.hex(32), content: content(r, type) }).finish());
        // content() draws its context at random; this one is its own, rewritten in place.
        const m = pb.Message.decode(own);
        const inner =
          pb[
            { 7: 'TpStateGetRequest', 9: 'TpStateSetRequest', 11: 'TpStateDeleteRequest', 13: 'TpReceiptAddDataRequest', 15: 'TpEventAddRequest' }[
              type as 7 | 9 | 11 | 13 | 15
            ]
          ];
        const msg = inner.decode(m.content);
        msg.contextId = ctx;
        await hostile.send(type, m.correlationId, inner.encode(msg).finish());
      } else {
        await fuzzOne(r, hostile, true);
      }
    }
    // The answer: OK or INVALID_TRANSACTION, with its own correlation id.
    const status = r.chance(0.6) ? 1 : 2;
    await hostile.send(
      MT.TP_PROCESS_RESPONSE,
      correlationId,
      pb.TpProcessResponse.encode({ status, message: r.string(), extendedData: data(r) }).finish(),
    );
    // Answered again, out of order, with other statuses.
    for (let i = 0, k = r.chance(0.3) ? r.int(5) : 0; i < k; i++)
      await hostile.send(MT.TP_PROCESS_RESPONSE, correlationId, content(r, MT.TP_PROCESS_RESPONSE));
  })();
}

/** While the honest processor holds a transaction: the hostile sockets aim at its context and correlation id. */
async function aimAtHonest(r: Rng): Promise<void> {
  const ctx = honest.lastContextId;
  const corr = honest.lastCorrelationId;
  const address = tallyAddress('honest');
  const shots: Array<[number, Buffer]> = [
    [MT.TP_STATE_SET_REQUEST, pb.TpStateSetRequest.encode({ contextId: ctx, entries: [{ address, data: Buffer.from('666') }] }).finish()],
    [MT.TP_STATE_DELETE_REQUEST, pb.TpStateDeleteRequest.encode({ contextId: ctx, addresses: [address] }).finish()],
    [MT.TP_STATE_GET_REQUEST, pb.TpStateGetRequest.encode({ contextId: ctx, addresses: [address] }).finish()],
    [
      MT.TP_EVENT_ADD_REQUEST,
      pb.TpEventAddRequest.encode({ contextId: ctx, event: { eventType: 'tally/added', attributes: [{ key: 'key', value: 'forged' }] } }).finish(),
    ],
    [MT.TP_RECEIPT_ADD_DATA_REQUEST, pb.TpReceiptAddDataRequest.encode({ contextId: ctx, data: Buffer.from('forged') }).finish()],
  ];
  for (const p of [hostile, ...noise]) {
    for (let i = 0, k = 1 + r.int(6); i < k; i++) {
      const [type, body] = r.pick(shots);
      await p.send(type, r.hex(32), body);
    }
    // An answer for the honest processor's transaction, from a socket it was not sent to.
    await p.send(MT.TP_PROCESS_RESPONSE, corr, pb.TpProcessResponse.encode({ status: r.pick([1, 2, 3]), message: 'forged' }).finish());
  }
  // A ping through each socket: what it sent before has been handled.
  await Promise.all([hostile, ...noise].map((p) => p.request(MT.PING_REQUEST, pb.PingRequest.encode({}).finish())));
}

// ---- the node and its honest users ----

let aimRng: Rng | null = null;

t.before(async () => {
  n = await startTestNode({ CAIRN_COMPONENT_BIND: '127.0.0.1:0' });
  endpoint = n.node.ledger.componentEndpoint ?? '';
  honest = new TestProcessor(endpoint, {
    before: async () => {
      seen.contexts.push(honest.lastContextId);
      seen.correlations.push(honest.lastCorrelationId);
      if (aimRng) await aimAtHonest(aimRng);
      return undefined;
    },
  });
  if ((await honest.start()) !== 1) throw new Error('the honest processor did not register');
  hostile = new Peer('hostile processor', endpoint);
  for (let i = 0; i < 3; i++) noise.push(new Peer(`noise ${i}`, endpoint));
  client = new ZmqClient(endpoint);
  t.comment(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} to repeat)`);
});

t.teardown(async () => {
  for (const p of [hostile, ...noise]) p?.close();
  client?.close();
  honest?.close();
  await n?.stop();
});

async function submitted(what: string, b: { id: string; txnIds: string[] }, bytes: Buffer): Promise<void> {
  const r = await postBatches(n.ledgerUrl, bytes);
  if (r.status !== 202) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.json)}`);
  known.batches.push(b.id);
  known.txns.push(...b.txnIds);
}

/** After a round: every check that says the node and its honest users are unharmed. */
async function checkRound(t: Test, round: number, fuzzBatch: string): Promise<void> {
  const tag = `round ${round} (seed ${SEED})`;
  const status = await within(`GET /status after ${tag}`, fetch(`${n.ledgerUrl}/status`), 15_000);
  t.equal(status.status, 200, `${tag}: GET /status answers`);
  await status.text();

  // The honest processor, with the hostile sockets aiming at its context meanwhile.
  aimRng = Rng.round(SEED, 1000 + round);
  const add = 1 + round;
  const tb = buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key: 'honest', n: add }))]);
  await submitted('tally batch', tb, batchList(tb));
  const ib = intkeyBatch(signer, [['set', `after-${round}`, round]]);
  await submitted('intkey batch', ib, batchList(ib));
  const [ts, is] = await waitCommitted(n.ledgerUrl, [tb.id, ib.id], 60);
  aimRng = null;
  t.equal(is?.status, 'COMMITTED', `${tag}: a signed intkey batch commits`);
  t.equal(ts?.status, 'COMMITTED', `${tag}: the honest processor's transaction commits`);
  tallyTotal += add;
  const v = await getJson(`${n.ledgerUrl}/state/${tallyAddress('honest')}`);
  t.equal(Buffer.from(v.json.data ?? '', 'base64').toString(), String(tallyTotal), `${tag}: only the honest processor wrote its transaction's state`);
  const receipt = await getJson(`${n.ledgerUrl}/receipts?id=${tb.txnIds[0]}`);
  const rc = receipt.json.data?.[0];
  t.same(
    (rc?.events ?? []).map((e: { event_type: string; attributes: Array<{ value: string }> }) => [e.event_type, e.attributes.map((a) => a.value)]),
    [['tally/added', ['honest']]],
    `${tag}: only the honest processor's event`,
  );
  t.equal(rc?.data?.length, 1, `${tag}: only the honest processor's receipt data`);

  // The hostile family's transaction is settled, one way or the other.
  const [fs] = await waitCommitted(n.ledgerUrl, [fuzzBatch], 60);
  t.ok(fs?.status === 'COMMITTED' || fs?.status === 'INVALID', `${tag}: the hostile processor's transaction is settled (${fs?.status})`);

  // Clients of the endpoint are answered.
  const cs = await client.request(MT.CLIENT_STATUS_GET_REQUEST, pb.ClientStatusGetRequest.encode({}).finish(), 15_000);
  t.equal(cs.type, MT.CLIENT_STATUS_GET_RESPONSE, `${tag}: a ZeroMQ client's status request is answered`);
  const bs = await client.request(MT.CLIENT_BATCH_STATUS_REQUEST, pb.ClientBatchStatusRequest.encode({ batchIds: [ib.id] }).finish(), 15_000);
  t.equal(pb.ClientBatchStatusResponse.decode(bs.content).batchStatuses[0]?.status, 1, `${tag}: … and its batch status request (COMMITTED)`);
  const bl = await client.request(MT.CLIENT_BLOCK_LIST_REQUEST, pb.ClientBlockListRequest.encode({ paging: { limit: 3 } }).finish(), 15_000);
  const blocks = pb.ClientBlockListResponse.decode(bl.content);
  t.equal(blocks.status, 1, `${tag}: … and its block list`);
  for (const b of blocks.blocks) known.blocks.push(b.headerSignature as string);

  // Every fuzzing socket is still served, and a new processor registers.
  for (const p of [hostile, ...noise]) {
    const pong = await p.request(MT.PING_REQUEST, pb.PingRequest.encode({}).finish()).catch((err: Error) => ({ type: -1, err }));
    t.equal(pong.type, MT.PING_RESPONSE, `${tag}: ${p.name} still gets its pings answered`);
  }
  const fresh = new Peer('fresh processor', endpoint);
  t.equal(await fresh.register(`fresh-${round}`, false, 1), 1, `${tag}: a new processor registers`);
  fresh.close();
}

t.test('found by seed 206744131: a batch submit with no content, among other submits, is refused alone', async (t) => {
  // The empty content reached the verify pool as an empty Array (protobufjs's default for an
  // absent bytes field), packed with the other bodies of its task: the pack threw outside
  // any handler on the HTTP thread.
  const submits = Array.from({ length: 8 }, (_, i) => batchList(intkeyBatch(signer, [['set', `empty-${i}`, i]])));
  submits.splice(4, 0, Buffer.alloc(0));
  const answers = await Promise.all(submits.map((body) => client.request(MT.CLIENT_BATCH_SUBMIT_REQUEST, body, 15_000)));
  const statuses = answers.map((a) => pb.ClientBatchSubmitResponse.decode(a.content).status as number);
  t.same(statuses, [1, 1, 1, 1, 3, 1, 1, 1, 1], 'the empty one is INVALID_BATCH, the others OK');
  const status = await fetch(`${n.ledgerUrl}/status`);
  t.equal(status.status, 200, 'the node still answers');
  await status.text();
  t.equal(n.node.ledger.fault, null, 'the ledger has no fault');
  const ib = intkeyBatch(signer, [['set', 'after-empty', 1]]);
  await submitted('intkey batch', ib, batchList(ib));
  t.equal((await waitCommitted(n.ledgerUrl, [ib.id], 30))[0]?.status, 'COMMITTED', 'and commits');
});

t.test('found by seed 2597609635: a transaction with an empty payload is checked, not a 500', async (t) => {
  // An empty payload is left off the wire; protobufjs decoded it as an empty Array (its
  // default for an absent bytes field), and hashing it for payload_sha512 threw in the
  // verify pool: POST /batches answered 500. src/proto/index.ts now decodes an absent bytes
  // field as an empty Buffer.
  const tx = buildTransaction(signer, {
    familyName: 'intkey',
    familyVersion: '1.0',
    inputs: ['1cf126'],
    outputs: ['1cf126'],
    payload: Buffer.alloc(0),
  });
  const absent = decode(Transaction, encode(Transaction, { header: Buffer.from([1]) })).payload;
  t.ok(Buffer.isBuffer(absent) && absent.length === 0, 'an absent payload decodes as an empty Buffer');
  const b = buildBatch(signer, [tx]);
  const r = await postBatches(n.ledgerUrl, batchList(b));
  t.equal(r.status, 202, 'the batch is accepted: its payload matches payload_sha512 (of no bytes)');
  // intkey cannot decode an empty payload: the transaction is invalid, the node goes on.
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0]?.status, 'INVALID', 'and is INVALID for intkey');
  t.equal(n.node.ledger.fault, null, 'the ledger has no fault');
});

t.test("found by seed 4238173211: a processor's answer that does not decode is an INTERNAL_ERROR, not silence", async (t) => {
  // An answer whose message is not UTF-8 failed to decode and was dropped: the transaction
  // waited for the 30-s process timeout (and every block with it). As INTERNAL_ERROR, it is
  // sent again at once (after the first back-off).
  const family = 'badutf8';
  const prefix = createHash('sha512').update(family).digest('hex').slice(0, 6);
  const tp = new Peer('bad answer', endpoint);
  t.teardown(() => tp.close());
  let attempts = 0;
  tp.onProcess = (corr) => {
    attempts++;
    // status OK (field 1), then message (field 2): one byte, 0xff, not UTF-8.
    const content = attempts === 1 ? Buffer.from([0x08, 0x01, 0x12, 0x01, 0xff]) : pb.TpProcessResponse.encode({ status: 1 }).finish();
    void tp.send(MT.TP_PROCESS_RESPONSE, corr, content);
  };
  const body = pb.TpRegisterRequest.encode({ family, version: '1.0', namespaces: [prefix] }).finish();
  const reg = await tp.request(MT.TP_REGISTER_REQUEST, body);
  t.equal(pb.TpRegisterResponse.decode(reg.content).status, 1);
  const b = buildBatch(signer, [
    buildTransaction(signer, { familyName: family, familyVersion: '1.0', inputs: [prefix], outputs: [prefix], payload: Buffer.from('x') }),
  ]);
  await submitted('batch', b, batchList(b));
  // Well within the process timeout (30 s): the undecodable answer was not waited out.
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 20))[0]?.status, 'COMMITTED', 'committed on the second answer');
  t.equal(attempts, 2, 'the transaction was sent again after the answer that did not decode');
});

for (let round = 0; round < ROUNDS; round++) {
  t.test(`round ${round}`, async (t) => {
    const r = Rng.round(SEED, round);
    // The hostile processor (re-)registers, and gets a transaction of its family.
    const hr = Rng.round(SEED, 2000 + round);
    hostile.onProcess = (corr, req) => hostileProcess(hr, corr, req);
    t.equal(await hostile.register(FUZZ_FAMILY, r.chance(0.5), r.int(2)), 1, 'the hostile processor registers its family');
    const fb = buildBatch(signer, [
      buildTransaction(signer, {
        familyName: FUZZ_FAMILY,
        familyVersion: '1.0',
        inputs: [fuzzPrefix],
        outputs: [fuzzPrefix],
        payload: r.bytes(r.int(64)),
      }),
    ]);
    await submitted('hostile family batch', fb, batchList(fb));
    const t0 = Date.now();
    const sent = await forAWhile(FUZZ_MS / ROUNDS, ROUND_MAX, () => fuzzOne(r, r.pick(noise)));
    const t1 = Date.now();
    await checkRound(t, round, fb.id);
    t.comment(`round ${round}: ${sent} messages from the noise sockets in ${t1 - t0} ms; checks ${Date.now() - t1} ms`);
  });
}

t.test('what was sent, and what the node answered', async (t) => {
  t.comment(`seed ${SEED}: ${JSON.stringify(counts)}`);
  const answered: Record<string, number> = {};
  for (const p of [hostile, ...noise]) for (const [type, k] of p.received) answered[type] = (answered[type] ?? 0) + k;
  t.comment(`answers by message type: ${JSON.stringify(answered)}`);
  t.same(failures, [], `no failure (seed ${SEED})`);
  t.equal(n.node.ledger.fault, null, 'the ledger has no fault');
});
