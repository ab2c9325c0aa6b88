#!/usr/bin/env node
/**
 * A small Sawtooth transaction processor in plain JavaScript: the `counter` family, version
 * 1.0. It connects to a validator's component endpoint (or Cairn's, --component-bind) with a
 * ZeroMQ DEALER socket (the `zeromq` package) and speaks the validator's processor messages,
 * encoded with protobufjs from src/proto/validator.proto (Sawtooth 1.2's field numbers), as
 * a processor written with a Sawtooth SDK does.
 *
 * A transaction's payload is JSON {"key": "apples", "n": 5}: the processor adds n (a whole
 * number) to the key's counter, kept as decimal text at
 *   sha512("counter")[0:6] + sha512(key)[0:64]
 * and adds a `counter/added` event and a line of receipt data. Anything else is an invalid
 * transaction, with the reason.
 *
 *   node examples/processor/counter.mjs [tcp://127.0.0.1:4004]   run the processor
 *   node examples/processor/counter.mjs address KEY               print a key's state address
 *
 * It stops on SIGINT or SIGTERM (unregistering first).
 */
import { createHash, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { Dealer } from 'zeromq';

export const FAMILY = 'counter';
export const VERSION = '1.0';
const sha512 = (s) => createHash('sha512').update(s).digest('hex');
export const PREFIX = sha512(FAMILY).slice(0, 6);
export const address = (key) => PREFIX + sha512(key).slice(0, 64);

const [arg, key] = process.argv.slice(2);
if (arg === 'address') {
  if (!key) {
    process.stderr.write('usage: node examples/processor/counter.mjs address KEY\n');
    process.exit(2);
  }
  process.stdout.write(`${address(key)}\n`);
  process.exit(0);
}
if (arg === '--help' || arg === '-h') {
  process.stdout.write('usage: node examples/processor/counter.mjs [tcp://host:port]   (default tcp://127.0.0.1:4004)\n');
  process.stdout.write('       node examples/processor/counter.mjs address KEY\n');
  process.exit(0);
}
const endpoint = arg ?? 'tcp://127.0.0.1:4004';

// The validator's messages. Every frame is one Envelope (upstream: validator.proto Message).
const root = protobuf.loadSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'proto', 'validator.proto'));
const type = (name) => root.lookupType(`cairn.component.${name}`);
const Envelope = type('Envelope');
const T = Envelope.getEnum('Kind');
const OK = 1;
const INVALID_TRANSACTION = 2;

const sock = new Dealer({ linger: 0 });
let sending = Promise.resolve();
const waiting = new Map();

/** Sends one message; zeromq allows one send at a time on a socket. */
function send(messageType, correlationId, message, content) {
  const bytes = Envelope.encode({ messageType, correlationId, content: type(message).encode(content).finish() }).finish();
  sending = sending.then(() => sock.send(bytes));
  return sending;
}

/** Sends a request and resolves with the decoded reply (matched by correlation id). */
function request(messageType, message, content, reply) {
  const correlationId = randomBytes(16).toString('hex');
  const answer = new Promise((resolve) => waiting.set(correlationId, (bytes) => resolve(type(reply).decode(bytes))));
  void send(messageType, correlationId, message, content);
  return answer;
}

/** Runs one transaction; throws an Error whose message is the reason it is invalid. */
async function apply(contextId, payload) {
  let op;
  try {
    op = JSON.parse(Buffer.from(payload).toString('utf8'));
  } catch {
    throw new Error('the payload is not JSON');
  }
  if (typeof op?.key !== 'string' || op.key === '') throw new Error('the payload needs a "key" (a non-empty string)');
  if (!Number.isSafeInteger(op.n) || op.n < 0) throw new Error('the payload needs "n", a whole number');
  const at = address(op.key);
  const got = await request(T.TP_STATE_GET_REQUEST, 'StateGetRequest', { contextId, addresses: [at] }, 'StateGetResponse');
  if (got.status !== OK) throw new Error(`the node refused to read ${at}: is it in the transaction's inputs?`);
  const before = got.entries.length > 0 ? Number(Buffer.from(got.entries[0].data).toString()) : 0;
  const after = before + op.n;
  const set = await request(
    T.TP_STATE_SET_REQUEST,
    'StateSetRequest',
    { contextId, entries: [{ address: at, data: Buffer.from(String(after)) }] },
    'StateSetResponse',
  );
  if (set.status !== OK) throw new Error(`the node refused to write ${at}: is it in the transaction's outputs?`);
  await request(
    T.TP_EVENT_ADD_REQUEST,
    'EventAddRequest',
    { contextId, event: { eventType: 'counter/added', attributes: [{ key: 'key', value: op.key }], data: Buffer.from(String(after)) } },
    'EventAddResponse',
  );
  await request(
    T.TP_RECEIPT_ADD_DATA_REQUEST,
    'ReceiptAddDataRequest',
    { contextId, data: Buffer.from(`${op.key}: ${before} -> ${after}`) },
    'ReceiptAddDataResponse',
  );
  process.stderr.write(`counter: ${op.key} ${before} -> ${after}\n`);
}

async function process_(correlationId, content) {
  const req = type('ProcessRequest').decode(content);
  let status = OK;
  let message = '';
  try {
    await apply(req.contextId, req.payload);
  } catch (err) {
    status = INVALID_TRANSACTION;
    message = err.message;
    process.stderr.write(`counter: transaction ${req.signature.slice(0, 16)}… is invalid: ${message}\n`);
  }
  await send(T.TP_PROCESS_RESPONSE, correlationId, 'ProcessResponse', { status, message });
}

async function receive() {
  for await (const [frame] of sock) {
    const m = Envelope.decode(frame);
    const reply = waiting.get(m.correlationId);
    if (reply) {
      waiting.delete(m.correlationId);
      reply(m.content);
    } else if (m.messageType === T.TP_PROCESS_REQUEST) void process_(m.correlationId, m.content);
    else if (m.messageType === T.PING_REQUEST) void send(T.PING_RESPONSE, m.correlationId, 'PingResponse', {});
  }
}

sock.connect(endpoint);
receive().catch(() => undefined); // ends when the socket closes
// ZeroMQ connects whenever the endpoint appears; a node that never does is reported.
const patience = setTimeout(() => {
  process.stderr.write(`counter: no answer from ${endpoint} in 60 s: is the node running, with its processor endpoint there (--component-bind)?\n`);
  process.exit(1);
}, 60_000);
const registered = await request(
  T.TP_REGISTER_REQUEST,
  'RegisterRequest',
  { family: FAMILY, version: VERSION, namespaces: [PREFIX], maxOccupancy: 1, protocolVersion: 1 },
  'RegisterResponse',
);
clearTimeout(patience);
if (registered.status !== OK) {
  process.stderr.write(`counter: the node at ${endpoint} refused the registration\n`);
  process.exit(1);
}
process.stderr.write(`counter: registered ${FAMILY} ${VERSION} (namespace ${PREFIX}) at ${endpoint}\n`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  const timer = setTimeout(() => process.exit(0), 2000);
  await request(T.TP_UNREGISTER_REQUEST, 'UnregisterRequest', {}, 'UnregisterResponse');
  clearTimeout(timer);
  sock.close();
  process.stderr.write('counter: stopped\n');
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
