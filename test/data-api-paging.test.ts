/**
 * The data API paging over 250 products (created in three calls, several records per
 * batch): the true total, the spec's paging object (relative links, `prev`/`next` left out
 * at the ends) on the first, a middle and the last page, defaults and bounds of
 * offset/limit, and paging of the nested lists.
 */
import t from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import { Api, acmeWithSchemas, expectCommitted, gtin, w } from './helpers/data-api.js';

const N = 250;
let node: TestNode;
let api: Api;

t.before(async () => {
  node = await startTestNode();
  api = new Api(node.dataUrl);
  await acmeWithSchemas(api);
  const product = (i: number): object => ({
    product_id: gtin(i),
    owner: 'acme',
    properties: [{ name: 'GDSN_3_1', data_type: 'STRING', value: `<item n="${i}"/>` }],
  });
  for (const [from, to] of [
    [1, 100],
    [101, 200],
    [201, N],
  ] as const) {
    const data = Array.from({ length: to - from + 1 }, (_, k) => product(from + k));
    await expectCommitted(api.post(w('/product'), { data }), `products ${from}..${to}`);
  }
});
t.teardown(() => node.stop());

t.test('default page: offset 0, limit 100, the true total', async (t) => {
  const r = await api.get('/product');
  t.equal(r.status, 200);
  t.equal(r.json.data.length, 100);
  const p = r.json.paging;
  t.match(p, { offset: 0, limit: 100, total: N });
  t.equal(p.current, '/product?limit=100&offset=0');
  t.equal(p.next, '/product?limit=100&offset=100');
  t.equal(p.last, '/product?limit=100&offset=200');
});

t.test('first, middle and last page: relative links, no prev/next at the ends', async (t) => {
  const first = (await api.get('/product?limit=100')).json.paging;
  t.same(first, {
    current: '/product?limit=100&offset=0',
    offset: 0,
    limit: 100,
    total: N,
    first: '/product?limit=100&offset=0',
    next: '/product?limit=100&offset=100',
    last: '/product?limit=100&offset=200',
  });
  t.notOk('prev' in first, 'no prev on the first page');
  const middle = (await api.get(first.next)).json.paging;
  t.same(middle, {
    current: '/product?limit=100&offset=100',
    offset: 100,
    limit: 100,
    total: N,
    first: '/product?limit=100&offset=0',
    prev: '/product?limit=100&offset=0',
    next: '/product?limit=100&offset=200',
    last: '/product?limit=100&offset=200',
  });
  t.same(Object.keys(middle), ['current', 'offset', 'limit', 'total', 'first', 'prev', 'next', 'last'], 'key order');
  const last = (await api.get(middle.last)).json.paging;
  t.same(last, {
    current: '/product?limit=100&offset=200',
    offset: 200,
    limit: 100,
    total: N,
    first: '/product?limit=100&offset=0',
    prev: '/product?limit=100&offset=100',
    last: '/product?limit=100&offset=200',
  });
  t.notOk('next' in last, 'no next on the last page');
  for (const p of [first, middle, last]) {
    for (const v of Object.values(p)) t.not(v, null, 'never null');
  }
});

t.test('following next visits every record once', async (t) => {
  const seen: string[] = [];
  let url: string | undefined = '/product?limit=40';
  let pages = 0;
  while (url !== undefined) {
    const r = await api.get(url);
    t.equal(r.json.paging.total, N);
    seen.push(...r.json.data.map((p: any) => p.product_id));
    url = r.json.paging.next;
    pages++;
  }
  t.equal(pages, Math.ceil(N / 40));
  t.equal(seen.length, N);
  t.equal(new Set(seen).size, N);
  t.same(seen, [...seen].sort(), 'stable order');

  const last = await api.get(`/product?limit=40&offset=${Math.floor((N - 1) / 40) * 40}`);
  t.equal(last.json.data.length, N % 40);
  t.notOk('next' in last.json.paging);
  t.equal(last.json.paging.prev, '/product?limit=40&offset=200');
  const viaLast = await api.get((await api.get('/product?limit=40')).json.paging.last);
  t.same(viaLast.json.data, last.json.data, 'last link leads to the last page');
});

t.test('limit 1000 returns everything; offsets past the end are empty', async (t) => {
  const all = await api.get('/product?limit=1000');
  t.equal(all.json.data.length, N);
  t.notOk('next' in all.json.paging);
  t.notOk('prev' in all.json.paging);
  const past = await api.get('/product?offset=400&limit=100');
  t.equal(past.json.data.length, 0);
  t.equal(past.json.paging.total, N);
  t.equal(past.json.paging.prev, '/product?limit=100&offset=200');
});

t.test('bad paging parameters are 400', async (t) => {
  for (const q of ['limit=0', 'limit=1001', 'limit=-5', 'limit=ten', 'offset=-1', 'offset=1.5']) {
    const r = await api.get(`/product?${q}`);
    t.equal(r.status, 400, q);
    t.match(r.json.message, q.startsWith('limit') ? /`limit`/ : /`offset`/);
  }
});

t.test('other query parameters are kept in links', async (t) => {
  const r = await api.get('/purchase_order?buyer_org_id=acme&limit=5');
  t.equal(r.json.paging.total, 0);
  t.equal(r.json.paging.current, '/purchase_order?buyer_org_id=acme&limit=5&offset=0');
});

t.test('nested lists page too', async (t) => {
  const r = await api.get('/role/acme?limit=1&offset=1');
  t.equal(r.json.paging.total, 2);
  t.same(
    r.json.data.map((x: any) => x.name),
    ['catalog'],
  );
  t.notOk('next' in r.json.paging);
  t.equal(r.json.paging.prev, '/role/acme?limit=1&offset=0');
});

t.test('links stay relative whatever address a proxy reports', async (t) => {
  const viaHeaders = await fetch(`${node.dataUrl}/product?limit=10`, {
    headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'data.example' },
  });
  const p1 = ((await viaHeaders.json()) as { paging: { next: string } }).paging;
  t.equal(p1.next, '/product?limit=10&offset=10');
  const viaForwarded = await fetch(`${node.dataUrl}/product?limit=10`, {
    headers: { forwarded: 'proto=https;host="proxy.example"' },
  });
  const p2 = ((await viaForwarded.json()) as { paging: { next: string } }).paging;
  t.equal(p2.next, '/product?limit=10&offset=10');
});
