/**
 * Ledger gateway lists: /blocks, /batches, /transactions. Chain order, paging by marker
 * (first page, next pages, last page, start in the middle, start not found), reverse,
 * limit edges, head (current, older, unknown, malformed, "latest", a block number), the
 * id filter, the empty list, single fetches, and link URLs (X-Forwarded-* / Forwarded).
 */
import t from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted } from './helpers/batches.js';
import { get, getWithHost, ids, keysSorted, walkPages } from './helpers/ledger-api.js';

const marker = (n: number): string => `0x${n.toString(16).padStart(16, '0')}`;
const UNKNOWN = 'f'.repeat(128);

let n: TestNode;
let url: string;
let head: string;
/** Blocks, newest first, as the chain holds them. */
let blocks: any[];
let allBatches: any[];
let allTxns: any[];

t.before(async () => {
  n = await startTestNode({ CAIRN_MAX_BATCHES_PER_BLOCK: '2' });
  url = n.ledgerUrl;
  const signer = newSigner();
  // 7 batches of 1 to 3 transactions, at most 2 batches per block: several blocks.
  const batches = [0, 1, 2, 3, 4, 5, 6].map((i) =>
    intkeyBatch(
      signer,
      Array.from({ length: (i % 3) + 1 }, (_, j): [string, string, number] => ['set', `p${i}-${j}`, i * 10 + j]),
    ),
  );
  t.equal((await postBatches(url, batchList(...batches))).status, 202);
  const st = await waitCommitted(
    url,
    batches.map((b) => b.id),
  );
  t.same(
    st.map((s) => s.status),
    Array(7).fill('COMMITTED'),
  );
  const all = await get(`${url}/blocks`);
  head = all.json.head;
  blocks = all.json.data;
  allBatches = blocks.flatMap((b) => b.batches);
  allTxns = allBatches.flatMap((b) => b.transactions);
});
t.teardown(() => n?.stop());

t.test('the chain under test', async (t) => {
  t.ok(blocks.length >= 5, `${blocks.length} blocks`);
  t.same(
    blocks.map((b) => b.header.block_num),
    blocks.map((_, i) => String(blocks.length - 1 - i)),
  );
  t.equal(blocks[0].header_signature, head);
  t.equal(allBatches.length, 8, 'genesis batch + 7');
  t.equal(allTxns.length, 3 + 1 + 2 + 3 + 1 + 2 + 3 + 1);
});

t.test('/blocks: whole list, envelope, compact sorted JSON', async (t) => {
  const r = await get(`${url}/blocks`);
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^application\/json/);
  t.notMatch(r.text, /\n/, 'compact');
  t.ok(keysSorted(r.json), 'keys sorted at every level');
  t.same(Object.keys(r.json), ['data', 'head', 'link', 'paging']);
  t.equal(r.json.link, `${url}/blocks?head=${head}&start=${marker(blocks.length - 1)}&limit=1000`);
  t.same(r.json.paging, { limit: null, start: null });
  const g = blocks[blocks.length - 1];
  t.equal(g.header.previous_block_id, '0000000000000000');
  t.same(Object.keys(g.batches[0]), ['header', 'header_signature', 'trace', 'transactions']);
  t.equal(g.batches[0].trace, false);
});

t.test('/blocks paging: first, next, last page; start; reverse', async (t) => {
  const first = await get(`${url}/blocks?limit=2`);
  t.same(ids(first.json.data), ids(blocks.slice(0, 2)));
  t.equal(first.json.link, `${url}/blocks?head=${head}&start=${marker(blocks.length - 1)}&limit=2`);
  t.same(first.json.paging, {
    limit: 2,
    next: `${url}/blocks?head=${head}&start=${marker(blocks.length - 3)}&limit=2`,
    next_position: marker(blocks.length - 3),
    start: null,
  });
  const pages = await walkPages(`${url}/blocks?limit=2`);
  t.same(
    pages.flatMap((p) => ids(p.json.data)),
    ids(blocks),
    'walking next covers the chain once',
  );
  const last = pages[pages.length - 1]!;
  t.notOk('next' in last.json.paging, 'last page has no next');
  t.notOk('next_position' in last.json.paging);
  t.equal(last.json.paging.start, pages[pages.length - 2]!.json.paging.next_position, 'paging.start echoes the client');

  const mid = await get(`${url}/blocks?start=${marker(2)}&limit=2`);
  t.same(ids(mid.json.data), ids(blocks.slice(-3, -1)), 'blocks 2 and 1');
  t.equal(mid.json.paging.next_position, marker(0));
  const short = await get(`${url}/blocks?start=0x2`);
  t.equal(short.json.data[0].header.block_num, '2', 'a short hex marker is read as a number');
  t.equal(short.json.paging.start, '0x2');
  t.equal(short.json.link, `${url}/blocks?head=${head}&start=${marker(2)}&limit=1000`);

  const rev = await walkPages(`${url}/blocks?reverse&limit=2`);
  t.same(
    rev.flatMap((p) => ids(p.json.data)),
    ids(blocks).reverse(),
    'reverse: genesis first',
  );
  t.equal(rev[0]!.json.paging.next, `${url}/blocks?head=${head}&start=${marker(2)}&limit=2&reverse`);
  const rev2 = await get(`${url}/blocks?reverse=block_num&start=${marker(1)}&limit=1`);
  t.same(ids(rev2.json.data), [blocks[blocks.length - 2].header_signature]);
  t.same((await get(`${url}/blocks?reverse=FALSE`)).json.data[0].header_signature, head, 'reverse=false: normal order');
});

t.test('/blocks: head, id filter, single fetch', async (t) => {
  const older = blocks[2];
  const h = await get(`${url}/blocks?head=${older.header_signature}`);
  t.equal(h.json.head, older.header_signature);
  t.same(ids(h.json.data), ids(blocks.slice(2)));
  t.equal((await get(`${url}/blocks?head=latest&limit=1`)).json.head, head, 'head=latest');
  t.equal((await get(`${url}/blocks?head=1&limit=1`)).json.data[0].header.block_num, '1', 'head as a block number');
  const above = await get(`${url}/blocks?head=${older.header_signature}&start=${marker(blocks.length - 1)}`);
  t.equal(above.status, 400, 'start above the head');
  t.equal(above.json.error.code, 54);

  const pick = [blocks[1].header_signature, blocks[3].header_signature, UNKNOWN];
  const f = await get(`${url}/blocks?id=${pick.join(',')}&limit=1`);
  t.same(ids(f.json.data), pick.slice(0, 2), 'in the order given, unknown ids left out, not paged');
  t.equal(f.json.link, `${url}/blocks?head=${head}&start&limit=0&id=${pick.join(',')}`);
  t.same(f.json.paging, { limit: 1, start: null });
  const fh = await get(`${url}/blocks?id=${pick.slice(0, 2).join(',')}&head=${blocks[2].header_signature}`);
  t.same(ids(fh.json.data), [blocks[3].header_signature], 'blocks above the head are dropped');

  const one = await get(`${url}/blocks/${blocks[1].header_signature}`);
  t.same(Object.keys(one.json), ['data', 'link'], 'no head on a single fetch');
  t.same(one.json.data, blocks[1]);
  t.equal(one.json.link, `${url}/blocks/${blocks[1].header_signature}`);
});

for (const [path, list] of [
  ['/batches', () => allBatches],
  ['/transactions', () => allTxns],
] as const) {
  t.test(`${path}: chain order, pages, start, reverse`, async (t) => {
    const all = list();
    const whole = await get(`${url}${path}`);
    t.same(ids(whole.json.data), ids(all), 'newest block first, block order kept');
    t.ok(keysSorted(whole.json));
    t.equal(whole.json.link, `${url}${path}?head=${head}&start=${all[0].header_signature}&limit=1000`);
    t.same(whole.json.paging, { limit: null, start: null });

    const pages = await walkPages(`${url}${path}?limit=3`);
    t.equal(pages.length, Math.ceil(all.length / 3));
    t.same(
      pages.flatMap((p) => ids(p.json.data)),
      ids(all),
    );
    t.same(pages[0]!.json.paging, {
      limit: 3,
      next: `${url}${path}?head=${head}&start=${all[3].header_signature}&limit=3`,
      next_position: all[3].header_signature,
      start: null,
    });
    t.notOk('next' in pages[pages.length - 1]!.json.paging, 'last page');

    const k = 4;
    const mid = await get(`${url}${path}?start=${all[k].header_signature}&limit=3`);
    t.same(ids(mid.json.data), ids(all.slice(k, k + 3)), 'start in the middle of a block');
    t.equal(mid.json.paging.start, all[k].header_signature);
    t.equal(mid.json.link, `${url}${path}?head=${head}&start=${all[k].header_signature}&limit=3`);

    const rev = [...all].reverse();
    const rpages = await walkPages(`${url}${path}?reverse&limit=4`);
    t.same(
      rpages.flatMap((p) => ids(p.json.data)),
      ids(rev),
      'reverse flips the whole list',
    );
    t.match(rpages[0]!.json.paging.next, /&limit=4&reverse$/);
    const rmid = await get(`${url}${path}?reverse=default&start=${rev[2].header_signature}&limit=2`);
    t.same(ids(rmid.json.data), ids(rev.slice(2, 4)));

    const last = await get(`${url}${path}?start=${all[all.length - 1].header_signature}`);
    t.same(ids(last.json.data), [all[all.length - 1].header_signature], 'start at the last item');
    t.same(last.json.paging, { limit: null, start: all[all.length - 1].header_signature });
  });

  t.test(`${path}: head, id filter, empty list, single fetch`, async (t) => {
    const all = list();
    const older = blocks[2];
    const onOlder = ids(blocks.slice(2).flatMap((b) => (path === '/batches' ? b.batches : b.batches.flatMap((x: any) => x.transactions))));
    const h = await get(`${url}${path}?head=${older.header_signature}`);
    t.equal(h.json.head, older.header_signature);
    t.same(ids(h.json.data), onOlder, "only what the older head's chain holds");
    const newer = await get(`${url}${path}?head=${older.header_signature}&start=${all[0].header_signature}`);
    t.equal(newer.json.error.code, 54, 'start above the head');

    const pick = [all[5].header_signature, all[1].header_signature, UNKNOWN, all[3].header_signature];
    const f = await get(`${url}${path}?id=${pick.join(',')}`);
    t.same(ids(f.json.data), [pick[0], pick[1], pick[3]], 'in the order given, unknown left out');
    t.equal(f.json.link, `${url}${path}?head=${head}&start=${pick[0]}&limit=1000&id=${pick.join(',')}`);
    const fr = await get(`${url}${path}?id=${pick.join(',')}&reverse&limit=2`);
    t.same(ids(fr.json.data), [pick[3], pick[1]], 'reversed and paged');
    t.equal(fr.json.paging.next, `${url}${path}?head=${head}&start=${pick[0]}&limit=2&id=${pick.join(',')}&reverse`);
    const fs = await get(`${url}${path}?id=${pick.join(',')}&start=${pick[1]}`);
    t.same(ids(fs.json.data), [pick[1], pick[3]]);
    const fbad = await get(`${url}${path}?id=${pick.join(',')}&start=${all[0].header_signature}`);
    t.equal(fbad.json.error.code, 54, 'start outside the picked ids');
    const fold = await get(`${url}${path}?id=${all[0].header_signature},${pick[3]}&head=${older.header_signature}`);
    t.same(ids(fold.json.data), onOlder.includes(pick[3]!) ? [pick[3]] : [], 'ids above the head are dropped');

    const empty = await get(`${url}${path}?id=${UNKNOWN}&start=${UNKNOWN}&limit=5`);
    t.equal(empty.status, 200, 'an empty list is not a paging error');
    t.same(empty.json.data, []);
    t.equal(empty.json.link, `${url}${path}?head=${head}&start&limit=0&id=${UNKNOWN}`);
    t.same(empty.json.paging, { limit: 5, start: UNKNOWN });

    const one = await get(`${url}${path}/${all[2].header_signature}?x=1`);
    t.same(Object.keys(one.json), ['data', 'link']);
    t.same(one.json.data, all[2]);
    t.equal(one.json.link, `${url}${path}/${all[2].header_signature}?x=1`);
  });
}

t.test('limit edges and the default / maximum', async (t) => {
  for (const q of ['limit=0', 'limit=-1', 'limit=abc', 'limit=', 'limit=1.5', 'limit=99999999999']) {
    for (const path of ['/blocks', '/batches', '/transactions', '/state']) {
      const r = await get(`${url}${path}?${q}`);
      t.equal(r.status, 400, `${path}?${q}`);
      t.equal(r.json.error.code, 53);
    }
  }
  const over = await get(`${url}/transactions?limit=5000`);
  t.equal(over.status, 200, 'over the maximum is capped, not refused');
  t.equal(over.json.data.length, allTxns.length);
  t.match(over.json.link, /&limit=1000$/, 'link shows the limit applied');
  t.equal(over.json.paging.limit, 5000, 'paging echoes the client');
  const one = await get(`${url}/transactions?limit=1`);
  t.equal(one.json.data.length, 1);
  t.equal(one.json.paging.next, `${url}/transactions?head=${head}&start=${allTxns[1].header_signature}&limit=1`);
});

t.test('start not found, bad reverse, bad or unknown head', async (t) => {
  const cases: Array<[string, number, number]> = [
    [`/blocks?start=${marker(999)}`, 400, 54],
    ['/blocks?start=12', 400, 54],
    ['/blocks?start=0xzz', 400, 54],
    [`/batches?start=${UNKNOWN}`, 400, 54],
    ['/batches?start=abc', 400, 54],
    [`/transactions?start=${allBatches[0].header_signature}`, 400, 54],
    ['/blocks?reverse=true', 400, 57],
    ['/blocks?reverse=default', 400, 57],
    ['/batches?reverse=block_num', 400, 57],
    ['/transactions?reverse=default,x', 400, 57],
    [`/blocks?head=${UNKNOWN}`, 404, 50],
    [`/batches?head=${UNKNOWN}`, 404, 50],
    [`/transactions?head=${UNKNOWN}`, 404, 50],
    ['/blocks?head=99', 404, 50],
    ['/batches?head=abc', 400, 60],
    ['/transactions?head=', 400, 60],
    ['/blocks?id=abc', 400, 60],
    ['/batches?id=', 400, 60],
  ];
  for (const [path, status, code] of cases) {
    const r = await get(`${url}${path}`);
    t.equal(r.status, status, path);
    t.equal(r.json.error?.code, code, path);
  }
});

t.test('links honour Forwarded and X-Forwarded-*', async (t) => {
  const x = await get(`${url}/blocks?limit=1`, {
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'ledger.example.com',
    'x-forwarded-path': '/api',
  });
  t.equal(x.json.link, `https://ledger.example.com/api/blocks?head=${head}&start=${marker(blocks.length - 1)}&limit=1`);
  t.equal(x.json.paging.next, `https://ledger.example.com/api/blocks?head=${head}&start=${marker(blocks.length - 2)}&limit=1`);
  const f = await get(`${url}/batches/${allBatches[0].header_signature}`, {
    forwarded: 'for=192.0.2.60;proto=https;host="proxy.example.org:8443";path=/sawtooth',
    'x-forwarded-host': 'ignored.example.com',
  });
  t.equal(f.json.link, `https://proxy.example.org:8443/sawtooth/batches/${allBatches[0].header_signature}`);
  const other = await getWithHost(`${url}/peers?b=2&a=1&a=3&reverse`, 'plain.example:8008');
  t.equal(other.json.link, 'http://plain.example:8008/peers?a=1&b=2&reverse', 'other keys sorted, first value kept, bare key');
});
