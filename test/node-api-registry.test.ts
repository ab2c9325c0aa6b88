import t from 'tap';
import { startApiNode, registerAndLogin, grant, VERSIONS, type ApiNode } from './helpers/node-api.js';

const n: ApiNode = await startApiNode();
t.teardown(() => n.stop());
const { call, admin } = n;

interface Node {
  identity: string;
  endpoints: string[];
  display_name: string;
  keys: string[];
  metadata: Record<string, string>;
}
const node = (id: string, meta: Record<string, string> = {}): Node => ({
  identity: id,
  endpoints: [`tcps://${id}.example:8044`],
  display_name: `Node ${id}`,
  keys: [`02${'cd'.repeat(32)}`],
  metadata: meta,
});
type Listed = { data: Node[]; paging: Record<string, string | number> };

t.test('add, fetch, replace, delete in both versions', async (t) => {
  for (const v of VERSIONS) {
    const o = { version: v, auth: admin };
    const a = node(`alpha-v${v}`, { company: 'Acme' });
    const add = await call('POST', '/registry/nodes', { ...o, body: a });
    t.equal(add.status, 200, `v${v} add`);
    t.type((add.body as { message: string }).message, 'string');
    t.equal((await call('POST', '/registry/nodes', { ...o, body: a })).status, 409, 'same identity twice');
    const got = await call('GET', `/registry/nodes/${a.identity}`, o);
    t.same(got.body, { data: a }, `v${v} fetch`);
    t.equal((await call('GET', '/registry/nodes/nope', o)).status, 404);

    const changed = { ...a, display_name: 'Renamed', metadata: { company: 'Acme', region: 'eu' } };
    const put = await call('PUT', `/registry/nodes/${a.identity}`, { ...o, body: changed });
    t.equal(put.status, 200, `v${v} replace`);
    t.equal((await call('PUT', `/registry/nodes/${a.identity}`, { ...o, body: changed })).status, 200, 'idempotent');
    t.same((await call('GET', `/registry/nodes/${a.identity}`, o)).body, { data: changed });
    const moved = await call('PUT', `/registry/nodes/${a.identity}`, { ...o, body: { ...changed, identity: 'other' } });
    t.equal(moved.status, 400, 'identity cannot change');
    t.match((moved.body as { message: string }).message, /Node identity cannot be changed: other/);

    const fresh = node(`beta-v${v}`);
    t.equal((await call('PUT', `/registry/nodes/${fresh.identity}`, { ...o, body: fresh })).status, 200, 'PUT adds a missing node');
    t.same((await call('GET', `/registry/nodes/${fresh.identity}`, o)).body, { data: fresh });

    t.equal((await call('DELETE', `/registry/nodes/${fresh.identity}`, o)).status, 200, `v${v} delete`);
    t.equal((await call('DELETE', `/registry/nodes/${fresh.identity}`, o)).status, 404);
    t.equal((await call('GET', `/registry/nodes/${fresh.identity}`, o)).status, 404);
  }
});

t.test('validation rules with clear messages', async (t) => {
  const base = node('valid');
  const cases: Array<[string, unknown, RegExp]> = [
    ['empty identity', { ...base, identity: '' }, /node must have non-empty identity/],
    ['no endpoints', { ...base, endpoints: [] }, /node must have one or more endpoints/],
    ['empty endpoint', { ...base, endpoints: ['tcps://x:1', ''] }, /node endpoint cannot be empty/],
    ['empty display_name', { ...base, display_name: '' }, /node must have non-empty display_name/],
    ['no keys', { ...base, keys: [] }, /node must have one or more keys/],
    ['empty key', { ...base, keys: [''] }, /node key cannot be empty/],
    ['missing metadata', { identity: 'x', endpoints: ['e'], display_name: 'd', keys: ['k'] }, /missing field "metadata"/],
    ['metadata not strings', { ...base, metadata: { a: 1 } }, /metadata "a" must be a string/],
    ['endpoints not array', { ...base, endpoints: 'tcps://x' }, /"endpoints" must be an array of strings/],
    ['identity number', { ...base, identity: 5 }, /"identity" must be a string/],
  ];
  for (const [what, body, msg] of cases) {
    const r = await call('POST', '/registry/nodes', { auth: admin, body });
    t.equal(r.status, 400, what);
    t.match((r.body as { message: string }).message, msg, what);
    t.match((r.body as { message: string }).message, /^Invalid node: /);
  }
  await call('POST', '/registry/nodes', { auth: admin, body: node('owner') });
  const clash = await call('POST', '/registry/nodes', { auth: admin, body: { ...node('thief'), endpoints: node('owner').endpoints } });
  t.equal(clash.status, 400);
  t.match((clash.body as { message: string }).message, /another node with endpoint tcps:\/\/owner.example:8044 exists/);
  const own = await call('PUT', '/registry/nodes/owner', {
    auth: admin,
    body: { ...node('owner'), endpoints: [...node('owner').endpoints, 'tcps://extra:1'] },
  });
  t.equal(own.status, 200, 'a node may keep its own endpoints');
  t.equal((await call('POST', '/registry/nodes', { auth: admin, raw: '{"identity":' })).status, 400, 'malformed JSON');
  t.equal((await call('DELETE', '/registry/nodes/owner', { auth: admin })).status, 200);
  t.equal(
    (await call('POST', '/registry/nodes', { auth: admin, body: { ...node('taker'), endpoints: ['tcps://extra:1'] } })).status,
    200,
    'deleted node frees its endpoints',
  );
});

t.test('list with metadata filters and paging', async (t) => {
  const fresh = await startApiNode();
  t.teardown(() => fresh.stop());
  const c = fresh.call;
  const companies = ['Acme', 'Bolt', 'Cargo', 'Dune'];
  for (let i = 0; i < 12; i++) {
    const meta: Record<string, string> = { company: companies[i % 4]!, rank: String(i).padStart(2, '0') };
    if (i % 3 === 0) meta.region = 'eu';
    await c('POST', '/registry/nodes', { auth: fresh.admin, body: node(`n${String(i).padStart(2, '0')}`, meta) });
  }
  const list = async (q: string, v: number = 2): Promise<Listed> => {
    const r = await c('GET', `/registry/nodes${q}`, { version: v, auth: fresh.admin });
    t.equal(r.status, 200, q);
    return r.body as Listed;
  };
  for (const v of VERSIONS) {
    const all = await list('', v);
    t.equal(all.data.length, 12, `v${v} list`);
    t.same(all.paging, {
      current: '/registry/nodes?limit=100&offset=0',
      offset: 0,
      limit: 100,
      total: 12,
      first: '/registry/nodes?limit=100&offset=0',
      prev: '/registry/nodes?limit=100&offset=0',
      next: '/registry/nodes?limit=100&offset=0',
      last: '/registry/nodes?limit=100&offset=0',
    });
  }
  const page = await list('?limit=5&offset=5');
  t.same(
    page.data.map((d) => d.identity),
    ['n05', 'n06', 'n07', 'n08', 'n09'],
  );
  t.same(page.paging, {
    current: '/registry/nodes?limit=5&offset=5',
    offset: 5,
    limit: 5,
    total: 12,
    first: '/registry/nodes?limit=5&offset=0',
    prev: '/registry/nodes?limit=5&offset=0',
    next: '/registry/nodes?limit=5&offset=10',
    last: '/registry/nodes?limit=5&offset=10',
  });

  const f = (obj: unknown): string => `?filter=${encodeURIComponent(JSON.stringify(obj))}`;
  const ids = async (q: string): Promise<string[]> => (await list(q)).data.map((d) => d.identity);
  t.same(await ids(f({ company: ['=', 'Acme'] })), ['n00', 'n04', 'n08'], '=');
  t.same(await ids(f({ company: ['!=', 'Acme'] })), ['n01', 'n02', 'n03', 'n05', 'n06', 'n07', 'n09', 'n10', 'n11'], '!=');
  t.same(await ids(f({ rank: ['>', '09'] })), ['n10', 'n11'], '>');
  t.same(await ids(f({ rank: ['<', '02'] })), ['n00', 'n01'], '<');
  t.same(await ids(f({ rank: ['>=', '10'] })), ['n10', 'n11'], '>=');
  t.same(await ids(f({ rank: ['<=', '01'] })), ['n00', 'n01'], '<=');
  t.same(await ids(f({ region: ['=', 'eu'], company: ['=', 'Dune'] })), ['n03'], 'AND of keys');
  t.same(await ids(f({ region: ['!=', 'eu'] })).then((l) => l.length), 8, 'missing key passes != only');
  t.same(await ids(f({ region: ['>', ''] })).then((l) => l.length), 4, 'missing key fails other operators');
  t.same(
    await ids(
      f({
        rank: [
          { operator: '>=', value: '03' },
          { operator: '<', value: '05' },
        ],
      }),
    ),
    ['n03', 'n04'],
    'list-of-objects form',
  );
  const paged = await list(`${f({ company: ['!=', 'Acme'] })}&limit=2&offset=2`);
  t.equal(paged.paging.total, 9, 'total counts filtered nodes');
  t.equal(paged.paging.next, `/registry/nodes?filter=${encodeURIComponent(JSON.stringify({ company: ['!=', 'Acme'] }))}&limit=2&offset=4`);

  const bad: Array<[string, RegExp]> = [
    ['?filter=not-json', /Invalid filter value passed/],
    [f({ company: ['~', 'x'] }), /~ is not a valid operator/],
    [f({ company: 'Acme' }), /must be \["<operator>", "<value>"\]/],
    [f(['=', 'x']), /JSON object/],
    [f({ company: ['=', 5] }), /must be a string/],
    ['?limit=101', /Invalid limit value passed: 101/],
    ['?limit=0', /Invalid limit/],
    ['?limit=abc', /Invalid limit/],
    ['?offset=-1', /Invalid offset/],
  ];
  for (const [q, msg] of bad) {
    const r = await c('GET', `/registry/nodes${q}`, { auth: fresh.admin });
    t.equal(r.status, 400, q);
    t.match((r.body as { message: string }).message, msg, q);
  }
});

t.test('registry permissions', async (t) => {
  const u = await registerAndLogin(call, 'reg-user');
  t.equal((await call('GET', '/registry/nodes')).status, 401);
  t.equal((await call('GET', '/registry/nodes', { auth: u.token })).status, 403);
  await grant(call, admin, 'user', u.userId, ['registry.read']);
  t.equal((await call('GET', '/registry/nodes', { auth: u.token })).status, 200);
  t.equal((await call('GET', '/registry/nodes/valid', { auth: u.token })).status, 404);
  t.equal((await call('POST', '/registry/nodes', { auth: u.token, body: node('x') })).status, 403);
  t.equal((await call('PUT', '/registry/nodes/x', { auth: u.token, body: node('x') })).status, 403);
  t.equal((await call('DELETE', '/registry/nodes/x', { auth: u.token })).status, 403);
});
