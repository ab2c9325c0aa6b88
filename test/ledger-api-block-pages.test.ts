/**
 * GET /blocks pages are written from each block's serialised JSON, kept once per block:
 * the bytes must be exactly what the block list schema writes for the same value (key
 * order, compact form, upstream shapes), the same on a first and a repeated read, the same
 * for a block on its own (/blocks/{id}) as inside a page, and paging must still work.
 */
import t from 'tap';
import { serializer } from '../src/http/route.js';
import { replies } from '../src/ledger-api/schemas.js';
import { startTestNode, type TestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted } from './helpers/batches.js';
import { get } from './helpers/ledger-api.js';

let n: TestNode;

t.before(async () => {
  n = await startTestNode({ CAIRN_MAX_BATCHES_PER_BLOCK: '3' });
  const signer = newSigner();
  const batches = Array.from({ length: 8 }, (_, i) =>
    intkeyBatch(
      signer,
      Array.from({ length: (i % 3) + 1 }, (_, j): [string, string, number] => ['set', `bp${i}-${j}`, i * 10 + j]),
    ),
  );
  t.equal((await postBatches(n.ledgerUrl, batchList(...batches))).status, 202);
  await waitCommitted(
    n.ledgerUrl,
    batches.map((b) => b.id),
  );
});
t.teardown(() => n?.stop());

const writeList = serializer(replies.blockList);

t.test('a page is byte for byte what the list schema writes', async (t) => {
  for (const q of ['', '?limit=2', '?limit=100', '?reverse', '?limit=1&reverse']) {
    const first = await get(`${n.ledgerUrl}/blocks${q}`);
    t.equal(first.status, 200, q);
    t.equal(first.headers.get('content-type'), 'application/json', q);
    t.ok(first.json.data.length > 0, q);
    t.equal(first.text, writeList(first.json), `${q}: same bytes as the schema writes`);
    const again = await get(`${n.ledgerUrl}/blocks${q}`);
    t.equal(again.text, first.text, `${q}: a repeated read (from the cache) is identical`);
  }
});

t.test('a block inside a page is the block on its own', async (t) => {
  const page = await get(`${n.ledgerUrl}/blocks`);
  for (const b of page.json.data) {
    const one = await get(`${n.ledgerUrl}/blocks/${b.header_signature}`);
    t.same(one.json.data, b);
    t.ok(page.text.includes(JSON.stringify(one.json.data)), `block ${b.header.block_num} appears verbatim`);
  }
});

t.test('paging walks the whole chain with the cached blocks', async (t) => {
  const all = (await get(`${n.ledgerUrl}/blocks`)).json.data.map((b: any) => b.header_signature);
  const walked: string[] = [];
  let next: string | undefined = `${n.ledgerUrl}/blocks?limit=2`;
  while (next) {
    const r = await get(next);
    t.equal(r.text, writeList(r.json));
    walked.push(...r.json.data.map((b: any) => b.header_signature));
    next = r.json.paging.next;
    t.equal(r.json.head, all[0]);
  }
  t.same(walked, all);
});

t.test('a page past a head that moved shows the new block', async (t) => {
  const before = await get(`${n.ledgerUrl}/blocks?limit=1`);
  const b = intkeyBatch(newSigner(), [['set', 'bp-late', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
  await waitCommitted(n.ledgerUrl, [b.id]);
  const after = await get(`${n.ledgerUrl}/blocks?limit=1`);
  t.equal(Number(after.json.data[0].header.block_num), Number(before.json.data[0].header.block_num) + 1);
  t.same(after.json.data[0].header.batch_ids, [b.id]);
  t.equal(after.text, writeList(after.json));
});
