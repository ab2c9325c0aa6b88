/**
 * The first end-to-end path over real HTTP: sign → submit → verify → execute → block →
 * status → state, INVALID batches, and a restart that keeps chain, state and statuses.
 */
import t from 'tap';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, getJson, waitCommitted } from './helpers/batches.js';
import { intkeyAddress } from '../src/families/intkey.js';
import { decode } from '../src/codec/cbor.js';
import { verify } from '../src/crypto/secp256k1.js';
import { BlockHeader } from '../src/proto/index.js';

t.test('submit, commit, read state, see the block, restart', async (t) => {
  let n = await startTestNode();
  t.teardown(() => n.stop());
  const signer = newSigner();
  const b = intkeyBatch(signer, [['set', 'foo', 42]]);

  const sub = await postBatches(n.ledgerUrl, batchList(b));
  t.equal(sub.status, 202);
  t.same(Object.keys(sub.json), ['link']);
  t.equal(sub.json.link, `${n.ledgerUrl}/batch_statuses?id=${b.id}`);

  const st = await getJson(`${sub.json.link}&wait=5`);
  t.equal(st.status, 200);
  t.same(st.json.data, [{ id: b.id, invalid_transactions: [], status: 'COMMITTED' }]);
  t.match(st.json.link, /\/batch_statuses\?id=[0-9a-f]{128}&wait=5$/);

  const addr = intkeyAddress('foo');
  const state = await getJson(`${n.ledgerUrl}/state/${addr}`);
  t.equal(state.status, 200);
  const value = decode(Buffer.from(state.json.data, 'base64')) as Map<string, number>;
  t.equal(value.get('foo'), 42);

  const blocks = await getJson(`${n.ledgerUrl}/blocks`);
  t.equal(blocks.status, 200);
  t.equal(blocks.json.data.length, 2, 'genesis and one block');
  const [head, genesis] = blocks.json.data;
  t.equal(head.header.block_num, '1');
  t.same(head.header.batch_ids, [b.id]);
  t.equal(head.header.previous_block_id, genesis.header_signature);
  t.equal(genesis.header.previous_block_id, '0000000000000000');
  t.equal(Buffer.from(genesis.header.consensus, 'base64').toString(), 'Genesis');
  t.equal(Buffer.from(head.header.consensus, 'base64').subarray(0, 7).toString(), 'Devmode');
  t.equal(head.header.signer_public_key, n.node.nodeSigner.publicKey);
  t.equal(blocks.json.head, head.header_signature);
  t.equal(state.json.head, head.header_signature);
  // The block id is the node's signature over the exact header bytes.
  const hdr = BlockHeader.encode(
    BlockHeader.fromObject({
      blockNum: 1,
      previousBlockId: head.header.previous_block_id,
      signerPublicKey: head.header.signer_public_key,
      batchIds: head.header.batch_ids,
      consensus: Buffer.from(head.header.consensus, 'base64'),
      stateRootHash: head.header.state_root_hash,
    }),
  ).finish();
  t.ok(verify(head.header_signature, hdr, head.header.signer_public_key), 'block signature verifies');

  const status = await getJson(`${n.ledgerUrl}/status`);
  t.same(status.json.data, { endpoint: '', peers: [] });

  // Restart on the same data directory.
  const dir = n.dataDir;
  await n.stop({ keepData: true });
  n = await startTestNode({}, dir);
  const again = await getJson(`${n.ledgerUrl}/batch_statuses?id=${b.id}`);
  t.equal(again.json.data[0].status, 'COMMITTED');
  const state2 = await getJson(`${n.ledgerUrl}/state/${addr}`);
  t.equal(state2.json.data, state.json.data);
  const blocks2 = await getJson(`${n.ledgerUrl}/blocks`);
  t.equal(blocks2.json.head, head.header_signature);

  // The chain continues from the restored head.
  const b2 = intkeyBatch(signer, [['inc', 'foo', 8]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(b2))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [b2.id]))[0].status, 'COMMITTED');
  const state3 = await getJson(`${n.ledgerUrl}/state/${addr}`);
  t.equal((decode(Buffer.from(state3.json.data, 'base64')) as Map<string, number>).get('foo'), 50);
  const blocks3 = await getJson(`${n.ledgerUrl}/blocks?limit=1`);
  t.equal(blocks3.json.data[0].header.block_num, '2');
  t.equal(blocks3.json.data[0].header.previous_block_id, head.header_signature);
});

t.test('a failing transaction makes its batch INVALID and changes no state', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  const signer = newSigner();
  const good = intkeyBatch(signer, [['set', 'a', 1]]);
  const bad = intkeyBatch(signer, [
    ['set', 'b', 5],
    ['inc', 'missing', 1],
  ]);
  const r = await postBatches(n.ledgerUrl, batchList(good, bad));
  t.equal(r.status, 202);
  const st = await waitCommitted(n.ledgerUrl, [good.id, bad.id]);
  t.equal(st[0].status, 'COMMITTED');
  t.equal(st[1].status, 'INVALID');
  t.same(st[1].invalid_transactions, [{ id: bad.txnIds[1], message: 'Verb is "inc" but name "missing" not in state' }]);
  // 'b' was set by the first transaction of the invalid batch: it must not be in state.
  const sb = await getJson(`${n.ledgerUrl}/state/${intkeyAddress('b')}`);
  t.equal(sb.status, 404);
  t.equal(sb.json.error.code, 75);
  const blocks = await getJson(`${n.ledgerUrl}/blocks?limit=1`);
  t.same(blocks.json.data[0].header.batch_ids, [good.id], 'the invalid batch is left out of the block');

  // Rule checks of intkey.
  const cases: Array<[string, string, number, RegExp]> = [
    ['set', 'a', 2, /already exists/],
    ['dec', 'a', 2, /less than 0/],
    ['inc', 'a', 4294967295, /greater than/],
    ['set', 'x'.repeat(21), 1, /no more than 20/],
    ['bogus', 'c', 1, /Verb must be/],
  ];
  for (const [verb, name, value, msg] of cases) {
    const batch = intkeyBatch(signer, [[verb, name, value]]);
    t.equal((await postBatches(n.ledgerUrl, batchList(batch))).status, 202);
    const [s] = await waitCommitted(n.ledgerUrl, [batch.id]);
    t.equal(s.status, 'INVALID', `${verb} ${name.slice(0, 5)} ${value}`);
    t.match(s.invalid_transactions[0].message, msg);
  }
  const sa = await getJson(`${n.ledgerUrl}/state/${intkeyAddress('a')}`);
  t.equal((decode(Buffer.from(sa.json.data, 'base64')) as Map<string, number>).get('a'), 1, 'a is unchanged');
});

t.test('intkey names that mean something to JavaScript objects are names like any other', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  const signer = newSigner();
  const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', '0', 'valueOf'];
  const sets = intkeyBatch(
    signer,
    names.map((name, i): [string, string, number] => ['set', name, i + 10]),
  );
  t.equal((await postBatches(n.ledgerUrl, batchList(sets))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [sets.id]))[0].status, 'COMMITTED');
  const incs = intkeyBatch(
    signer,
    names.map((name): [string, string, number] => ['inc', name, 1]),
  );
  t.equal((await postBatches(n.ledgerUrl, batchList(incs))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [incs.id]))[0].status, 'COMMITTED', 'each name is in state for its inc');
  for (const [i, name] of names.entries()) {
    const s = await getJson(`${n.ledgerUrl}/state/${intkeyAddress(name)}`);
    t.equal(s.status, 200, name);
    const m = decode(Buffer.from(s.json.data, 'base64')) as Map<string, number>;
    t.same([...m], [[name, i + 11]], `${name}: stored as a one-entry map`);
  }
});

t.test('batch statuses: POST form, UNKNOWN, wait without value, bad ids', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  const unknown = 'f'.repeat(128);
  const post = await fetch(`${n.ledgerUrl}/batch_statuses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([unknown]),
  });
  t.equal(post.status, 200);
  t.same(await post.json(), { data: [{ id: unknown, invalid_transactions: [], status: 'UNKNOWN' }] });
  // UNKNOWN ids do not block a wait.
  const w = await getJson(`${n.ledgerUrl}/batch_statuses?id=${unknown}&wait`);
  t.equal(w.json.data[0].status, 'UNKNOWN');
  const errs: Array<[string, RequestInit | undefined, number, number]> = [
    ['/batch_statuses', undefined, 400, 66],
    ['/batch_statuses?id=', undefined, 400, 60],
    ['/batch_statuses?id=abc', undefined, 400, 60],
    ['/batch_statuses', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '[]' }, 400, 43],
    ['/batch_statuses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[]' }, 400, 46],
    ['/batch_statuses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' }, 400, 46],
    ['/batch_statuses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'not json' }, 400, 46],
    ['/batch_statuses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '["zz"]' }, 400, 60],
  ];
  for (const [path, init, status, code] of errs) {
    const r = await fetch(`${n.ledgerUrl}${path}`, init);
    const body = (await r.json()) as { error: { code: number; title: string; message: string } };
    t.equal(r.status, status, `${path} ${init?.body ?? ''}`);
    t.equal(body.error.code, code);
    t.type(body.error.title, 'string');
    t.type(body.error.message, 'string');
  }
});
