/**
 * A real client: the upstream JavaScript SDK (sawtooth-sdk) builds and signs intkey batches
 * as its guide shows; the results are checked through every ledger gateway read route:
 * statuses, batches, transactions, blocks, state (with head, paging by address), receipts
 * (GET, POST, wait), peers and status. Then the chain is walked from head to genesis:
 * links, signatures, and the head's state root rebuilt from the /state leaves.
 */
import t from 'tap';
import { createRequire } from 'node:module';
import { startTestNode, type TestNode } from './helpers/node.js';
import {
  get,
  post,
  ids,
  keysSorted,
  walkPages,
  sdkSigner,
  sdkSigning,
  sdkIntkeyBatch,
  sdkBatchList,
  sdkBlockHeaderBytes,
  intkeyAddressOf,
} from './helpers/ledger-api.js';
import { decode } from '../src/codec/cbor.js';
import { rootOf } from '../src/state/merkle.js';

const require = createRequire(import.meta.url);
const { Secp256k1PublicKey } = require('sawtooth-sdk/signing/secp256k1');
const UNKNOWN = 'f'.repeat(128);

const cbor = (b64: string): Map<string, number> => decode(Buffer.from(b64, 'base64')) as Map<string, number>;

let n: TestNode;
let url: string;

// Blocks are at least 1.5 s apart, so a request can be made before the commit it waits for.
t.before(async () => {
  n = await startTestNode({ CAIRN_MIN_BLOCK_INTERVAL_MS: '1500' });
  url = n.ledgerUrl;
});
t.teardown(() => n?.stop());

t.test('SDK-built batches through every read route', async (t) => {
  const signer = sdkSigner();
  const pub = signer.getPublicKey().asHex();
  // A first block: the next one cannot follow for 1.5 s.
  const w = sdkIntkeyBatch(signer, [['set', 'sdk-w', 1]]);
  t.equal((await post(`${url}/batches`, sdkBatchList([w.batch]), 'application/octet-stream')).status, 202);
  t.equal((await get(`${url}/batch_statuses?id=${w.id}&wait=10`)).json.data[0].status, 'COMMITTED');
  const a = sdkIntkeyBatch(signer, [
    ['set', 'sdk-a', 10],
    ['set', 'sdk-b', 20],
  ]);
  const b = sdkIntkeyBatch(signer, [['set', 'sdk-c', 5]]);
  const sub = await post(`${url}/batches`, sdkBatchList([a.batch, b.batch]), 'application/octet-stream');
  t.equal(sub.status, 202);
  t.same(sub.json, { link: `${url}/batch_statuses?id=${a.id},${b.id}` });

  // Not committed yet: receipts are 404 code 80; with wait the answer comes at the commit.
  const before = await get(`${url}/receipts?id=${a.txnIds[0]}`);
  t.equal(before.status, 404);
  t.equal(before.json.error.code, 80);
  const t0 = Date.now();
  const waited = await post(`${url}/receipts?wait=20`, JSON.stringify([...a.txnIds, ...b.txnIds]), 'application/json');
  t.equal(waited.status, 200, 'POST /receipts?wait returns once the receipts exist');
  t.ok(Date.now() - t0 < 10_000, `woken by the commit (${Date.now() - t0} ms)`);
  t.same(Object.keys(waited.json), ['data'], 'POST /receipts has no link');
  t.same(
    waited.json.data.map((r: any) => r.id),
    [...a.txnIds, ...b.txnIds],
    'request order',
  );

  const st = await get(`${sub.json.link}&wait=5`);
  t.same(
    st.json.data.map((s: any) => s.status),
    ['COMMITTED', 'COMMITTED'],
  );
  t.equal(st.json.link, `${url}/batch_statuses?id=${a.id},${b.id}&wait=5`);
  const stPost = await post(`${url}/batch_statuses`, JSON.stringify([b.id, a.id]), 'application/json');
  t.same(stPost.json, {
    data: [
      { id: b.id, invalid_transactions: [], status: 'COMMITTED' },
      { id: a.id, invalid_transactions: [], status: 'COMMITTED' },
    ],
  });

  // The batch as stored is the batch the SDK built.
  const ba = await get(`${url}/batches/${a.id}`);
  t.equal(ba.status, 200);
  t.ok(keysSorted(ba.json));
  t.same(ba.json.data.header, { signer_public_key: pub, transaction_ids: a.txnIds });
  t.equal(ba.json.data.header_signature, a.id);
  t.equal(ba.json.data.trace, false);
  t.same(ids(ba.json.data.transactions), a.txnIds);
  const tx = await get(`${url}/transactions/${a.txnIds[1]}`);
  const sdkTxn = a.batch.transactions[1];
  t.same(tx.json.data, {
    header: {
      batcher_public_key: pub,
      dependencies: [],
      family_name: 'intkey',
      family_version: '1.0',
      inputs: [intkeyAddressOf('sdk-b')],
      nonce: '',
      outputs: [intkeyAddressOf('sdk-b')],
      payload_sha512: require('node:crypto').createHash('sha512').update(sdkTxn.payload).digest('hex'),
      signer_public_key: pub,
    },
    header_signature: a.txnIds[1],
    payload: Buffer.from(sdkTxn.payload).toString('base64'),
  });
  const listed = await get(`${url}/batches?id=${b.id},${a.id}`);
  t.same(ids(listed.json.data), [b.id, a.id]);
  const txListed = await get(`${url}/transactions?limit=3`);
  t.same(ids(txListed.json.data), [...a.txnIds, ...b.txnIds], 'the newest block first, in block order');

  // The block that holds them.
  const blocks = await get(`${url}/blocks?limit=1`);
  const head = blocks.json.head;
  t.same(blocks.json.data[0].header.batch_ids, [a.id, b.id]);
  t.equal(blocks.json.data[0].header.block_num, '2');
  const byId = await get(`${url}/blocks/${head}`);
  t.same(byId.json.data, blocks.json.data[0]);

  // State.
  const addrA = intkeyAddressOf('sdk-a');
  const sa = await get(`${url}/state/${addrA}`);
  t.same(Object.keys(sa.json), ['data', 'head', 'link']);
  t.same([...cbor(sa.json.data)], [['sdk-a', 10]]);
  t.equal(sa.json.head, head);
  t.equal(sa.json.link, `${url}/state/${addrA}?head=${head}`);
  const list = await get(`${url}/state?address=1cf126`);
  const addrs = ['sdk-a', 'sdk-b', 'sdk-c', 'sdk-w'].map(intkeyAddressOf).sort();
  t.same(
    list.json.data.map((e: any) => e.address),
    addrs,
    'sorted by address',
  );
  t.equal(list.json.link, `${url}/state?head=${head}&start=${addrs[0]}&limit=1000&address=1cf126`);
  t.same(list.json.paging, { limit: null, start: null });

  // Receipts: state changes, events and data as upstream shows them.
  const rc = await get(`${url}/receipts?id=${a.txnIds[0]},${b.txnIds[0]}`);
  t.equal(rc.json.link, `${url}/receipts?id=${a.txnIds[0]},${b.txnIds[0]}`);
  t.ok(keysSorted(rc.json));
  t.same(rc.json.data[0], {
    data: [],
    events: [],
    id: a.txnIds[0],
    state_changes: [{ address: addrA, type: 'SET', value: sa.json.data }],
  });
  const genesis = (await get(`${url}/blocks?head=0`)).json.data[0];
  const gTxns = genesis.batches[0].transactions.map((x: any) => x.header_signature);
  const gr = await get(`${url}/receipts?id=${gTxns.join(',')}`);
  t.equal(gr.json.data.length, 3);
  t.same(gr.json.data[0].events, [
    { attributes: [{ key: 'updated', value: 'sawtooth.settings.vote.authorized_keys' }], event_type: 'settings/update' },
  ]);
  t.equal(gr.json.data[0].state_changes[0].type, 'SET');
  const missing = await get(`${url}/receipts?id=${a.txnIds[0]},${UNKNOWN}`);
  t.equal(missing.status, 404, 'one unknown id fails the whole request');
  t.equal(missing.json.error.code, 80);
  const t1 = Date.now();
  const late = await get(`${url}/receipts?id=${UNKNOWN}&wait=1`);
  t.equal(late.json.error.code, 80, 'wait ends at its time');
  t.ok(Date.now() - t1 >= 900, 'waited about a second');

  // Peers and status of a single node.
  t.same((await get(`${url}/peers`)).json, { data: [], link: `${url}/peers` });
  t.same((await get(`${url}/status`)).json, { data: { endpoint: '', peers: [] }, link: `${url}/status` });

  // A second block on top: the state at the older head is still there.
  const c = sdkIntkeyBatch(signer, [
    ['inc', 'sdk-a', 5],
    ['set', 'sdk-d', 1],
  ]);
  t.equal((await post(`${url}/batches`, sdkBatchList([c.batch]), 'application/octet-stream')).status, 202);
  const stc = await get(`${url}/batch_statuses?id=${c.id}&wait=10`);
  t.equal(stc.json.data[0].status, 'COMMITTED');
  t.same([...cbor((await get(`${url}/state/${addrA}`)).json.data)], [['sdk-a', 15]]);
  const old = await get(`${url}/state/${addrA}?head=${head}`);
  t.same([...cbor(old.json.data)], [['sdk-a', 10]], 'state at an older head');
  t.equal(old.json.head, head);
  const atGenesis = await get(`${url}/state/${addrA}?head=${genesis.header_signature}`);
  t.equal(atGenesis.status, 404);
  t.equal(atGenesis.json.error.code, 75);
  const oldList = await get(`${url}/state?address=1cf126&head=${head}`);
  t.same(
    oldList.json.data.map((e: any) => e.address),
    addrs,
    'sdk-d is not in the older state',
  );
});

t.test('/state paging by address, reverse, prefixes and errors', async (t) => {
  const all = (await get(`${url}/state`)).json;
  const head = all.head;
  const addrs: string[] = all.data.map((e: any) => e.address);
  t.ok(addrs.length >= 7, `${addrs.length} leaves`);
  t.same(addrs, [...addrs].sort());
  const pages = await walkPages(`${url}/state?limit=2`);
  t.same(
    pages.flatMap((p) => p.json.data.map((e: any) => e.address)),
    addrs,
  );
  t.same(pages[0]!.json.paging, { limit: 2, next: `${url}/state?head=${head}&start=${addrs[2]}&limit=2`, next_position: addrs[2], start: null });
  t.notOk('next' in pages[pages.length - 1]!.json.paging);
  const rev = await walkPages(`${url}/state?reverse&limit=3`);
  t.same(
    rev.flatMap((p) => p.json.data.map((e: any) => e.address)),
    [...addrs].reverse(),
  );
  const mid = await get(`${url}/state?start=${addrs[3]}&limit=2`);
  t.same(
    mid.json.data.map((e: any) => e.address),
    addrs.slice(3, 5),
  );
  t.equal(mid.json.paging.start, addrs[3]);
  const rmid = await get(`${url}/state?start=${addrs[3]}&limit=2&reverse`);
  t.same(
    rmid.json.data.map((e: any) => e.address),
    [addrs[3], addrs[2]],
  );
  const pre = await get(`${url}/state?address=1cf126&start=${intkeyAddressOf('sdk-d')}&limit=1`);
  t.same(
    pre.json.data.map((e: any) => e.address),
    [intkeyAddressOf('sdk-d')],
  );
  t.same((await get(`${url}/state?address=`)).json.data.length, addrs.length, 'an empty prefix is every leaf');

  const empty = await get(`${url}/state?address=ab&start=${addrs[0]}`);
  t.equal(empty.status, 200);
  t.same(empty.json.data, []);
  t.equal(empty.json.link, `${url}/state?head=${head}&start&limit=0&address=ab`);
  t.same(empty.json.paging, { limit: null, start: addrs[0] });

  const cases: Array<[string, number, number]> = [
    [`/state?start=${`1cf126${'0'.repeat(64)}`}`, 400, 54],
    ['/state?start=zz', 400, 54],
    [`/state?address=1cf126&start=${addrs[0]}`, 400, 54],
    ['/state?address=1cf12', 400, 62],
    ['/state?address=1CF126', 400, 62],
    [`/state?address=${'a'.repeat(72)}`, 400, 62],
    ['/state?reverse=true', 400, 57],
    [`/state?head=${UNKNOWN}`, 404, 70],
    [`/state/${addrs[0]}?head=${UNKNOWN}`, 404, 70],
    ['/state?head=abc', 400, 60],
    [`/state/${addrs[0]}?head=12345`, 404, 70],
    ['/state/1cf126', 404, 75],
    [`/state/${`1cf126${'0'.repeat(64)}`}`, 404, 75],
    ['/state/1cf12g', 400, 62],
    [`/state/${addrs[0]}00`, 400, 62],
  ];
  for (const [path, status, code] of cases) {
    const r = await get(`${url}${path}`);
    t.equal(r.status, status, path);
    t.equal(r.json.error?.code, code, path);
  }
  t.equal((await get(`${url}/state?head=`)).json.head, head, 'an empty head on /state is the current head');
});

t.test('walk /blocks from head to genesis: links, signatures, state roots', async (t) => {
  const context = sdkSigning.createContext('secp256k1');
  const pages = await walkPages(`${url}/blocks?limit=2`);
  const chain = pages.flatMap((p) => p.json.data);
  const head = pages[0]!.json.head;
  t.equal(chain[0].header_signature, head);
  t.equal(chain[chain.length - 1].header.block_num, '0');
  for (let i = 0; i < chain.length; i++) {
    const b = chain[i];
    t.equal(b.header.block_num, String(chain.length - 1 - i));
    const prev = i + 1 < chain.length ? chain[i + 1].header_signature : '0000000000000000';
    t.equal(b.header.previous_block_id, prev, `block ${b.header.block_num} links to its parent`);
    t.ok(
      context.verify(b.header_signature, sdkBlockHeaderBytes(b.header), Secp256k1PublicKey.fromHex(b.header.signer_public_key)),
      `block ${b.header.block_num} signature`,
    );
    t.equal(b.header.signer_public_key, n.node.nodeSigner.publicKey);
  }
  for (const b of [chain[0], chain[1]]) {
    const leaves = await walkPages(`${url}/state?head=${b.header_signature}&limit=3`);
    const m = new Map<string, Uint8Array>();
    for (const p of leaves) for (const e of p.json.data) m.set(e.address, Buffer.from(e.data, 'base64'));
    t.equal(rootOf(m), b.header.state_root_hash, `block ${b.header.block_num}: the leaves rebuild state_root_hash`);
  }
});
