/**
 * The component endpoint as the validator's port for processors of any SDK version and for
 * event subscribers: registration echoes the protocol version; the client event service
 * (subscribe, filters, catch-up, CLIENT_EVENTS_GET) over real ZeroMQ sockets with the
 * sawtooth-sdk package's protobufs; its bounds (a subscriber that stops reading is cut off,
 * a flood of subscriptions is refused past the limit).
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild, logMessage } from './helpers/child.js';
import { startTestNode, type TestNode } from './helpers/node.js';
import { newSigner, buildBatch, buildTransaction, batchList, postBatches, waitCommitted, intkeyBatch, getJson } from './helpers/batches.js';
import { TestProcessor, tallySpec } from './helpers/processor.js';
import { ZmqClient, pb, MT, attr, type DecodedEvent } from './helpers/zmq-client.js';
import { intkeyAddress } from '../src/families/intkey.js';

const F = pb.EventFilter.FilterType;
const INTKEY_PREFIX = '1cf126';

async function startNode(env: Record<string, string> = {}, dir?: string): Promise<{ n: TestNode; endpoint: string }> {
  const n = await startTestNode({ CAIRN_COMPONENT_BIND: '127.0.0.1:0', ...env }, dir);
  return { n, endpoint: n.node.ledger.componentEndpoint ?? '' };
}

async function commit(n: TestNode, ...batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
  const r = await postBatches(n.ledgerUrl, batchList(...(batches as never[])));
  if (r.status !== 202) throw new Error(`submit answered ${r.status}`);
  const statuses = await waitCommitted(
    n.ledgerUrl,
    batches.map((b) => b.id),
    30,
  );
  if (statuses.some((s: { status: string }) => s.status !== 'COMMITTED')) throw new Error(`not committed: ${JSON.stringify(statuses)}`);
}

const commitEvent = (list: DecodedEvent[]): DecodedEvent | undefined => list.find((e) => e.eventType === 'sawtooth/block-commit');

t.test('registration echoes the protocol version asked for; above the highest served it is refused', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const v0 = new TestProcessor(endpoint, { protocolVersion: 0 });
  t.teardown(() => v0.close());
  t.equal(await v0.start(), 1, 'OK for version 0 (the Python SDK)');
  t.equal(v0.registeredVersion, 0, 'version 0 echoed');
  const v1 = new TestProcessor(endpoint, { protocolVersion: 1, raw: true, family: 'other' });
  t.teardown(() => v1.close());
  t.equal(await v1.start(), 1);
  t.equal(v1.registeredVersion, 1);
  const v9 = new TestProcessor(endpoint, { protocolVersion: 9, family: 'future' });
  t.teardown(() => v9.close());
  t.equal(await v9.start(), 2, 'ERROR above the highest version served');

  // The version-0 processor runs its family's transactions.
  const signer = newSigner();
  await commit(n, buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key: 'v0', n: 3 }))]));
  t.equal(v0.received.length, 1);
});

t.test('a subscriber gets block-commit, processor events and state deltas in order, filtered; catches up after a restart', async (t) => {
  const first = await startNode();
  let n = first.n;
  t.teardown(() => n.stop());
  const tp = new TestProcessor(first.endpoint);
  t.teardown(() => tp.close());
  await tp.start();

  const subscriptions = [
    { eventType: 'sawtooth/block-commit' },
    { eventType: 'sawtooth/state-delta', filters: [{ key: 'address', matchString: `^${INTKEY_PREFIX}`, filterType: F.REGEX_ANY }] },
    { eventType: 'tally/added', filters: [{ key: 'key', matchString: 'apples', filterType: F.SIMPLE_ANY }] },
  ];
  const sub = new ZmqClient(first.endpoint);
  t.teardown(() => sub.close());
  t.same(await sub.subscribe(subscriptions), { status: 1, responseMessage: '' }, 'OK');

  const signer = newSigner();
  await commit(n, intkeyBatch(signer, [['set', 'a', 1]]));
  await commit(n, buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key: 'apples', n: 2 }))]));
  await commit(n, buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key: 'pears', n: 2 }))]));
  await commit(
    n,
    intkeyBatch(signer, [
      ['set', 'b', 5],
      ['inc', 'a', 1],
    ]),
  );
  const lists = await sub.waitEventLists(4);
  t.same(
    lists.map((l) => l.map((e) => e.eventType)),
    [
      ['sawtooth/block-commit', 'sawtooth/state-delta'],
      ['sawtooth/block-commit', 'tally/added'],
      ['sawtooth/block-commit'],
      ['sawtooth/block-commit', 'sawtooth/state-delta'],
    ],
    'block-commit first; tally/added only for key apples; state deltas only under the intkey prefix',
  );
  const nums = lists.map((l) => Number(attr(commitEvent(l) as DecodedEvent, 'block_num')));
  t.same(nums, [1, 2, 3, 4], 'one message per block, in order');
  const head = (await getJson(`${n.ledgerUrl}/blocks?limit=1`)).json.data[0];
  const last = commitEvent(lists[3] ?? []) as DecodedEvent;
  t.equal(attr(last, 'block_id'), head.header_signature);
  t.equal(attr(last, 'state_root_hash'), head.header.state_root_hash);
  t.equal(attr(last, 'previous_block_id'), head.header.previous_block_id);
  const delta = (lists[3] ?? [])[1] as DecodedEvent;
  const changes = pb.StateChangeList.decode(delta.data).stateChanges;
  t.same(changes.map((c: { address: string }) => c.address).sort(), [intkeyAddress('a'), intkeyAddress('b')].sort());
  t.same(delta.attributes.map((a) => a.value).sort(), [intkeyAddress('a'), intkeyAddress('b')].sort(), 'one address attribute per change');
  t.equal(Buffer.from((lists[1] ?? [])[1]?.data ?? []).toString(), '2', "the processor's event data");

  // CLIENT_EVENTS_GET: the same events for named blocks; an unknown block is UNKNOWN_BLOCK.
  const blockId = attr(last, 'block_id');
  const got = await sub.request(MT.CLIENT_EVENTS_GET_REQUEST, pb.ClientEventsGetRequest.encode({ subscriptions, blockIds: [blockId] }).finish());
  t.equal(got.type, MT.CLIENT_EVENTS_GET_RESPONSE);
  const gotMsg = pb.ClientEventsGetResponse.decode(got.content);
  t.equal(gotMsg.status, 1);
  t.same(
    gotMsg.events.map((e: DecodedEvent) => e.eventType),
    lists[3]?.map((e) => e.eventType),
  );
  const unknown = await sub.request(
    MT.CLIENT_EVENTS_GET_REQUEST,
    pb.ClientEventsGetRequest.encode({ subscriptions, blockIds: ['ab'.repeat(64)] }).finish(),
  );
  t.equal(pb.ClientEventsGetResponse.decode(unknown.content).status, 4, 'UNKNOWN_BLOCK');

  // Restart: the subscriber knew block 4; two blocks are committed while it is away.
  tp.close();
  sub.close();
  await n.stop({ keepData: true });
  const second = await startNode({}, n.dataDir);
  n = second.n;
  await commit(n, intkeyBatch(signer, [['set', 'c', 7]]));
  await commit(n, intkeyBatch(signer, [['set', 'd', 8]]));
  const again = new ZmqClient(second.endpoint);
  t.teardown(() => again.close());
  t.equal((await again.subscribe(subscriptions, ['ff'.repeat(64)])).status, 3, 'UNKNOWN_BLOCK when no block named is known');
  t.equal((await again.subscribe(subscriptions, ['ff'.repeat(64), blockId])).status, 1, 'OK with one known block among them');
  await commit(n, intkeyBatch(signer, [['set', 'e', 9]]));
  const caught = await again.waitEventLists(3);
  t.same(
    caught.map((l) => Number(attr(commitEvent(l) as DecodedEvent, 'block_num'))),
    [5, 6, 7],
    'the blocks after the known one, then the live one, in order and once',
  );
  t.same(
    caught.map((l) => pb.StateChangeList.decode(l[1]?.data).stateChanges[0].address),
    [intkeyAddress('c'), intkeyAddress('d'), intkeyAddress('e')],
  );

  // From the null block id: everything since genesis, block 0 included.
  const all = new ZmqClient(second.endpoint);
  t.teardown(() => all.close());
  t.equal((await all.subscribe([{ eventType: 'sawtooth/block-commit' }], ['0000000000000000'])).status, 1);
  const allLists = await all.waitEventLists(8);
  t.same(
    allLists.map((l) => Number(attr(l[0] as DecodedEvent, 'block_num'))),
    [0, 1, 2, 3, 4, 5, 6, 7],
  );

  // Unsubscribed: no more events (checked after a round trip that follows the next block's events).
  const un = await again.request(MT.CLIENT_EVENTS_UNSUBSCRIBE_REQUEST, pb.ClientEventsUnsubscribeRequest.encode({}).finish());
  t.equal(pb.ClientEventsUnsubscribeResponse.decode(un.content).status, 1);
  await commit(n, intkeyBatch(signer, [['set', 'f', 1]]));
  await all.waitEventLists(9);
  await again.request(MT.CLIENT_EVENTS_GET_REQUEST, pb.ClientEventsGetRequest.encode({ subscriptions: [], blockIds: [] }).finish());
  t.equal(again.eventLists.length, 3, 'nothing after the unsubscribe');
});

t.test('filters: SIMPLE_ALL, REGEX_ALL, bad filters refused; unknown and malformed messages answered', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const c = new ZmqClient(endpoint);
  t.teardown(() => c.close());
  const bad = await c.subscribe([{ eventType: 'x', filters: [{ key: 'k', matchString: '(', filterType: F.REGEX_ANY }] }]);
  t.equal(bad.status, 2, 'INVALID_FILTER for a regex that does not compile');
  t.match(bad.responseMessage, /Invalid regular expression/);
  t.equal((await c.subscribe([{ eventType: 'x', filters: [{ key: 'k', matchString: 'v', filterType: F.FILTER_TYPE_UNSET }] }])).status, 2);
  const many = Array.from({ length: 65 }, () => ({ eventType: 'x' }));
  t.match((await c.subscribe(many)).responseMessage, /At most 64 subscriptions/);
  const long = await c.subscribe([{ eventType: 'x', filters: [{ key: 'k', matchString: 'a'.repeat(2000), filterType: F.SIMPLE_ANY }] }]);
  t.match(long.responseMessage, /at most 1024 characters/);

  t.equal(
    (
      await c.subscribe([
        {
          eventType: 'sawtooth/block-commit',
          filters: [
            { key: 'block_num', matchString: '^[0-9]+$', filterType: F.REGEX_ALL },
            { key: 'block_num', matchString: '2', filterType: F.SIMPLE_ALL },
          ],
        },
      ])
    ).status,
    1,
  );
  const signer = newSigner();
  await commit(n, intkeyBatch(signer, [['set', 'a', 1]]));
  await commit(n, intkeyBatch(signer, [['set', 'b', 1]]));
  const [only] = await c.waitEventLists(1);
  t.equal(attr((only ?? [])[0] as DecodedEvent, 'block_num'), '2', 'only block 2 passes both filters');

  // CLIENT_EVENTS_GET refuses what subscribe refuses, and more block ids than it reads.
  const getBad = await c.request(
    MT.CLIENT_EVENTS_GET_REQUEST,
    pb.ClientEventsGetRequest.encode({
      subscriptions: [{ eventType: 'x', filters: [{ key: 'k', matchString: '(', filterType: F.REGEX_ANY }] }],
    }).finish(),
  );
  t.equal(pb.ClientEventsGetResponse.decode(getBad.content).status, 3, 'INVALID_FILTER');
  const getMany = await c.request(
    MT.CLIENT_EVENTS_GET_REQUEST,
    pb.ClientEventsGetRequest.encode({ subscriptions: [], blockIds: Array.from({ length: 257 }, () => 'ab'.repeat(64)) }).finish(),
  );
  t.equal(pb.ClientEventsGetResponse.decode(getMany.content).status, 4, 'UNKNOWN_BLOCK past 256 ids');

  // A malformed subscribe, a client request type not served, a type nobody knows: all answered.
  const garbage = await c.request(MT.CLIENT_EVENTS_SUBSCRIBE_REQUEST, Buffer.from([0xff, 0xff, 0xff]));
  t.equal(garbage.type, MT.NETWORK_ACK);
  t.equal(pb.NetworkAcknowledgement.decode(garbage.content).status, 2, 'ERROR');
  const unknown = await c.request(9999, Buffer.from('x'));
  t.equal(unknown.type, MT.NETWORK_ACK);
  t.equal(pb.NetworkAcknowledgement.decode(unknown.content).status, 2);
  const consensus = await c.request(800, Buffer.alloc(0));
  t.equal(consensus.type, MT.NETWORK_ACK);
  t.equal((await getJson(`${n.ledgerUrl}/status`)).status, 200, 'the node is healthy');
});

t.test('a flood of subscribers is bounded; a subscriber that stops reading is cut off, not the node', async (t) => {
  const { n, endpoint } = await startNode({ CAIRN_COMPONENT_SUBSCRIBERS: '3', CAIRN_COMPONENT_QUEUE: '4' });
  t.teardown(() => n.stop());
  const tp = new TestProcessor(endpoint);
  t.teardown(() => tp.close());
  await tp.start();
  const clients = Array.from({ length: 4 }, () => new ZmqClient(endpoint));
  t.teardown(() => {
    for (const c of clients) c.close();
  });
  const [a, b, c, d] = clients as [ZmqClient, ZmqClient, ZmqClient, ZmqClient];
  const subs = [{ eventType: 'tally/added' }];
  t.equal((await a.subscribe(subs)).status, 1);
  for (let i = 0; i < 20; i++) t.equal((await b.subscribe(subs)).status, 1, 'a subscriber subscribing again replaces its subscription');
  t.equal((await c.subscribe(subs)).status, 1);
  const refused = await d.subscribe(subs);
  t.equal(refused.status, 2);
  t.match(refused.responseMessage, /Too many subscribers \(3\)/);
  await b.request(MT.CLIENT_EVENTS_UNSUBSCRIBE_REQUEST, pb.ClientEventsUnsubscribeRequest.encode({}).finish());
  t.equal((await d.subscribe(subs)).status, 1, 'room again after an unsubscribe');
  const clientsOf = n.node.clients;
  if (!clientsOf) throw new Error('no client service');
  // Round trips through both threads until `done` holds (the committer thread's notices come in between).
  const until = async (done: () => boolean): Promise<void> => {
    for (let i = 0; i < 100 && !done(); i++) {
      await a.request(MT.CLIENT_EVENTS_GET_REQUEST, pb.ClientEventsGetRequest.encode({ subscriptions: [], blockIds: [] }).finish());
    }
  };
  c.close();
  await until(() => clientsOf.subscribers === 2);
  t.equal(clientsOf.subscribers, 2, 'a subscriber that disconnects is forgotten');

  // A subscriber that never reads, with big events.
  const slow = new ZmqClient(endpoint, { read: false, receiveHighWaterMark: 1 });
  t.teardown(() => slow.close());
  await slow.sendRaw(
    Buffer.from(
      pb.Message.encode({
        messageType: MT.CLIENT_EVENTS_SUBSCRIBE_REQUEST,
        correlationId: 'slow',
        content: pb.ClientEventsSubscribeRequest.encode({ subscriptions: subs }).finish(),
      }).finish(),
    ),
  );
  await until(() => clientsOf.subscribers === 3);
  t.equal(clientsOf.subscribers, 3, 'the slow one subscribed');
  const signer = newSigner();
  let blocks = 0;
  while (clientsOf.subscribers > 2 && blocks < 40) {
    await commit(n, buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key: `k${blocks}`, n: 1, pad: 512 * 1024 }))]));
    blocks++;
    // The cut-off comes from the committer thread: round trips through it let it arrive.
    await until(() => a.eventLists.length >= blocks);
  }
  t.equal(clientsOf.subscribers, 2, `the slow subscriber was cut off (after ${blocks} blocks of 512 KiB events)`);
  await a.waitEventLists(blocks);
  t.equal(a.eventLists.length, blocks, 'a reading subscriber got every block meanwhile');
  t.equal((await getJson(`${n.ledgerUrl}/status`)).status, 200, 'the node is healthy');
});

t.test('a processor that disconnects while idle is logged', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-idle-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const node = await startChild(dir, { CAIRN_COMPONENT_BIND: '127.0.0.1:0' });
  t.teardown(() => node.kill9());
  const endpoint = /transaction processors on (tcp:\/\/[\d.]+:\d+)/.exec(node.log())?.[1] ?? '';
  t.match(endpoint, /^tcp:/, 'the start line names the endpoint');
  const tp = new TestProcessor(endpoint);
  t.equal(await tp.start(), 1);
  tp.close();
  const logged = (): boolean =>
    node
      .log()
      .split('\n')
      .some((l) => / disconnected$/.test(logMessage(l)));
  for (let i = 0; i < 100 && !logged(); i++) await new Promise((r) => setTimeout(r, 100));
  t.ok(logged(), 'the departure of an idle processor is in the log');
  t.equal(await node.stop(), 0);
});

t.test('the subscriber example of docs/transaction-processors.md works against the node', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const signer = newSigner();
  await commit(n, intkeyBatch(signer, [['set', 'x', 1]]));
  const known = (await getJson(`${n.ledgerUrl}/blocks?limit=1`)).json.data[0].header_signature;
  await commit(n, intkeyBatch(signer, [['set', 'y', 2]]));
  // Resumes after block 1: block 2 by catch-up, then block 3 live, then exits.
  const child = spawn(process.execPath, ['docs/examples/event-subscriber.mjs', endpoint, INTKEY_PREFIX, known, '2'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => void child.kill('SIGKILL'));
  let out = '';
  const collect = (d: Buffer): void => {
    out += d.toString();
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  for (let i = 0; i < 200 && !out.includes('subscribed'); i++) await new Promise((r) => setTimeout(r, 50));
  await commit(n, intkeyBatch(signer, [['set', 'z', 3]]));
  t.equal(await exited, 0, out);
  const lines = out.trim().split('\n');
  t.equal(lines[0], 'subscribed');
  t.match(lines[1], /^block 2 [0-9a-f]{128}$/);
  t.equal(lines[2], `  set ${intkeyAddress('y')}`);
  t.match(lines[3], /^block 3 [0-9a-f]{128}$/);
  t.equal(lines[4], `  set ${intkeyAddress('z')}`);
});

t.test('catch-up over many blocks comes in order, in steps', async (t) => {
  const { n, endpoint } = await startNode({ CAIRN_MAX_BATCHES_PER_BLOCK: '1' });
  t.teardown(() => n.stop());
  const signer = newSigner();
  const batches = Array.from({ length: 70 }, (_, i) => intkeyBatch(signer, [['set', `m${i}`, i]]));
  t.equal((await postBatches(n.ledgerUrl, batchList(...(batches as never[])))).status, 202);
  const last = batches.at(-1)?.id ?? '';
  t.equal((await waitCommitted(n.ledgerUrl, [last], 30))[0].status, 'COMMITTED');
  const head = Number((await getJson(`${n.ledgerUrl}/blocks?limit=1`)).json.data[0].header.block_num);
  t.ok(head >= 70, `${head} blocks`);
  const c = new ZmqClient(endpoint);
  t.teardown(() => c.close());
  t.equal((await c.subscribe([{ eventType: 'sawtooth/block-commit' }], ['0000000000000000'])).status, 1);
  const lists = await c.waitEventLists(head + 1);
  t.same(
    lists.map((l) => Number(attr(l[0] as DecodedEvent, 'block_num'))),
    Array.from({ length: head + 1 }, (_, i) => i),
    'every block from genesis, once, in order',
  );
});
