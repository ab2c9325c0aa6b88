/**
 * The component endpoint under malformed and hostile traffic: garbage frames, unknown
 * message types, oversized frames, replies with wrong correlation or context ids, answers
 * from a processor that was not asked. None of it stops the node or lets a message touch
 * a transaction it does not belong to; a well-behaved processor still commits afterwards.
 */
import t from 'tap';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { startTestNode } from './helpers/node.js';
import { newSigner, buildBatch, buildTransaction, batchList, postBatches, getJson, waitCommitted } from './helpers/batches.js';
import { TestProcessor, tallyAddress, tallySpec } from './helpers/processor.js';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const pb: any = require('sawtooth-sdk/protobuf');
const MT = pb.Message.MessageType;

t.test('garbage, unknown types, huge frames and stray ids never stop the node', async (t) => {
  const n = await startTestNode({ CAIRN_COMPONENT_BIND: '127.0.0.1:0' });
  t.teardown(() => n.stop());
  const endpoint = n.node.ledger.componentEndpoint ?? '';
  const hostile = new TestProcessor(endpoint);
  t.teardown(() => hostile.close());
  hostile.connect();

  // Not protobuf at all, several frames at once, an empty frame, a huge frame.
  await hostile.sendRaw(Buffer.from('this is not a protobuf message \xff\xfe'));
  await hostile.sendRaw([Buffer.from('two'), Buffer.from('frames')]);
  await hostile.sendRaw(randomBytes(4096));
  // Over the 64 MiB frame limit: ZeroMQ drops that connection (its own socket, so the
  // messages queued behind it on the hostile one are not lost with it).
  const giant = new TestProcessor(endpoint);
  t.teardown(() => giant.close());
  giant.connect();
  await giant.sendRaw(Buffer.alloc(70 * 1024 * 1024, 0x0a));
  // Message types the endpoint does not serve (a client request, a consensus message, an unknown number).
  await hostile.send(MT.CLIENT_BATCH_SUBMIT_REQUEST, 'c1', randomBytes(64));
  await hostile.send(800, 'c2', Buffer.alloc(0));
  await hostile.send(9999, 'c3', Buffer.from('x'));
  // A process response nobody asked for, and state calls with made-up context ids.
  await hostile.send(MT.TP_PROCESS_RESPONSE, 'no-such-request', pb.TpProcessResponse.encode({ status: 1 }).finish());
  const get = await hostile.request(
    MT.TP_STATE_GET_REQUEST,
    pb.TpStateGetRequest.encode({ contextId: 'made-up', addresses: [tallyAddress('x')] }).finish(),
  );
  t.equal(get.type, MT.TP_STATE_GET_RESPONSE);
  t.equal(pb.TpStateGetResponse.decode(get.content).status, 2, 'AUTHORIZATION_ERROR for an unknown context');
  const set = await hostile.request(
    MT.TP_STATE_SET_REQUEST,
    pb.TpStateSetRequest.encode({ contextId: 'made-up', entries: [{ address: tallyAddress('x'), data: Buffer.from('1') }] }).finish(),
  );
  t.equal(pb.TpStateSetResponse.decode(set.content).status, 2);
  const event = await hostile.request(MT.TP_EVENT_ADD_REQUEST, pb.TpEventAddRequest.encode({ contextId: 'made-up' }).finish());
  t.equal(pb.TpEventAddResponse.decode(event.content).status, 2, 'ERROR for an event without a context');
  // Malformed content inside a well-formed envelope.
  await hostile.send(MT.TP_REGISTER_REQUEST, 'bad-register', Buffer.from([0xff, 0xff, 0xff]));
  // Registration without a family is refused.
  const reg = await hostile.request(MT.TP_REGISTER_REQUEST, pb.TpRegisterRequest.encode({ family: '', version: '1.0' }).finish());
  t.equal(pb.TpRegisterResponse.decode(reg.content).status, 2, 'ERROR');
  // Heartbeat: a PING_REQUEST is answered.
  const ping = await hostile.request(MT.PING_REQUEST, pb.PingRequest.encode({}).finish());
  t.equal(ping.type, MT.PING_RESPONSE);

  // A real processor, and a second one that answers OK for a transaction it was never given
  // (a wrong correlation id) and tries to write into the first one's context.
  const snoop = new TestProcessor(endpoint, { family: 'other' });
  t.teardown(() => snoop.close());
  await snoop.start();
  let seenContext = '';
  const honest = new TestProcessor(endpoint, {
    before: async (info) => {
      // Let the snoop try to use this transaction's context before the honest processor answers.
      const ctx = honest.lastContextId;
      seenContext = ctx;
      const r = await snoop.request(
        MT.TP_STATE_SET_REQUEST,
        pb.TpStateSetRequest.encode({
          contextId: ctx,
          entries: [{ address: tallyAddress(String(info.payload.key)), data: Buffer.from('666') }],
        }).finish(),
      );
      snoopStatus = pb.TpStateSetResponse.decode(r.content).status;
      await snoop.send(MT.TP_PROCESS_RESPONSE, honest.lastCorrelationId, pb.TpProcessResponse.encode({ status: 2, message: 'forged' }).finish());
      return undefined;
    },
  });
  let snoopStatus = -1;
  t.teardown(() => honest.close());
  await honest.start();

  const signer = newSigner();
  const b = buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key: 'safe', n: 2 }))]);
  const r = await postBatches(n.ledgerUrl, batchList(b));
  t.equal(r.status, 202);
  const [status] = await waitCommitted(n.ledgerUrl, [b.id], 30);
  t.equal(status.status, 'COMMITTED', 'the forged INVALID answer from another processor was ignored');
  t.ok(seenContext.length > 0);
  t.equal(snoopStatus, 2, "another processor cannot write into a transaction's context");
  const v = await getJson(`${n.ledgerUrl}/state/${tallyAddress('safe')}`);
  t.equal(Buffer.from(v.json.data, 'base64').toString(), '2');
  t.equal((await getJson(`${n.ledgerUrl}/status`)).status, 200, 'the node is healthy');
});

t.test('after TP_UNREGISTER_REQUEST a family waits again; the endpoint can be turned off', async (t) => {
  const n = await startTestNode({ CAIRN_COMPONENT_BIND: '127.0.0.1:0' });
  t.teardown(() => n.stop());
  const tp = new TestProcessor(n.node.ledger.componentEndpoint ?? '');
  t.teardown(() => tp.close());
  await tp.start();
  t.equal(await tp.unregister(), 1, 'unregister answered OK');
  const signer = newSigner();
  const b = buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key: 'later', n: 1 }))]);
  t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
  await new Promise((r) => setTimeout(r, 1000));
  t.equal((await getJson(`${n.ledgerUrl}/batch_statuses?id=${b.id}`)).json.data[0].status, 'PENDING');
  t.equal(tp.received.length, 0, 'not sent to the unregistered processor');
  await tp.start();
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED');

  // Off: no endpoint, and a family the node does not carry is refused at submission, as before.
  const off = await startTestNode({ CAIRN_COMPONENT_BIND: 'off' });
  t.teardown(() => off.stop());
  t.equal(off.node.ledger.componentEndpoint, undefined);
  const refused = await postBatches(
    off.ledgerUrl,
    batchList(buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key: 'x', n: 1 }))])),
  );
  t.equal(refused.status, 400);
  t.match(refused.json.error.message, /unknown transaction family "tally"/);
});

t.test('a component port in use stops the start with a message naming the flag', async (t) => {
  const a = await startTestNode({ CAIRN_COMPONENT_BIND: '127.0.0.1:0' });
  t.teardown(() => a.stop());
  const taken = (a.node.ledger.componentEndpoint ?? '').replace('tcp://', '');
  await t.rejects(
    startTestNode({ CAIRN_COMPONENT_BIND: taken }),
    /cannot listen on 127\.0\.0\.1:\d+ for the transaction processor endpoint.*--component-bind/,
  );
});
