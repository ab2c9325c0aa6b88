/**
 * Ids longer than a store key may be (a 10,000-character user id, role name, registry
 * identity, block id; 1,000 `é` in a registry endpoint): 404 for a lookup of what cannot
 * exist, 400 for a body that would create it, never a 500, on all three interfaces.
 */
import t from 'tap';
import { startApiNode, type ApiNode } from './helpers/node-api.js';
import { Api, w } from './helpers/data-api.js';
import { MAX_ID_BYTES } from '../src/http/ids.js';

/** Over LMDB's key limit (1978 bytes) yet under the request-target limit (longer targets are 414). */
const LONG = 'u'.repeat(2_500);
const HUGE = 'u'.repeat(10_000);
/** Just under the request-target limit. */
const BIG = 'u'.repeat(8_000);
const ACCENTS = 'é'.repeat(1_000);
let a: ApiNode;

t.before(async () => {
  a = await startApiNode();
});
t.teardown(() => a?.stop());

t.test('A: over-long path ids are 404, over-long body ids 400', async (t) => {
  const { call, admin } = a;
  const lookups: Array<[string, string, unknown?]> = [];
  for (const id of [LONG, ACCENTS, encodeURIComponent(ACCENTS)]) {
    lookups.push(
      ['GET', `/biome/users/${id}`],
      ['PUT', `/biome/users/${id}`, { username: 'x', hashed_password: 'y' }],
      ['DELETE', `/biome/users/${id}`],
      ['GET', `/biome/profiles/${id}`],
      ['GET', `/registry/nodes/${id}`],
      ['PUT', `/registry/nodes/${id}`, { identity: 'n', endpoints: ['tcp://a:1'], display_name: 'n', keys: ['k'], metadata: {} }],
      ['DELETE', `/registry/nodes/${id}`],
      ['GET', `/authorization/roles/${id}`],
      ['PATCH', `/authorization/roles/${id}`, { display_name: 'x' }],
      ['DELETE', `/authorization/roles/${id}`],
      ['GET', `/authorization/assignments/user/${id}`],
      ['DELETE', `/authorization/assignments/user/${id}`],
      ['GET', `/biome/keys/${id}`],
    );
  }
  for (const [m, p, body] of lookups) {
    const r = await call(m, p, { auth: admin, body });
    t.equal(r.status, 404, `${m} ${p.slice(0, 40)}…`);
    t.type((r.body as { message: unknown }).message, 'string');
  }
  const node = (over: Record<string, unknown>): unknown => ({
    identity: 'n1',
    endpoints: ['tcp://n1:8044'],
    display_name: 'N1',
    keys: [`02${'cd'.repeat(32)}`],
    metadata: {},
    ...over,
  });
  for (const body of [
    node({ endpoints: [ACCENTS] }),
    node({ endpoints: ['tcp://ok:1', `tcp://${'é'.repeat(300)}`] }),
    node({ identity: '€'.repeat(200) }),
    node({ identity: HUGE }),
  ]) {
    const r = await call('POST', '/registry/nodes', { auth: admin, body });
    t.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
    t.match((r.body as { message: string }).message, new RegExp(`at most (256 characters|${MAX_ID_BYTES} bytes)|longer than`));
  }
  // Just under the bound is fine.
  const ok = await call('POST', '/registry/nodes', { auth: admin, body: node({ endpoints: [`tcp://${'é'.repeat(100)}`] }) });
  t.equal(ok.status, 200, ok.text);
  t.equal((await call('GET', '/registry/nodes/n1', { auth: admin })).status, 200);
});

t.test('B: over-long path ids are 404, over-long record ids 400 before anything is submitted', async (t) => {
  const api = new Api(a.t.dataUrl);
  for (const id of [LONG, encodeURIComponent(ACCENTS)]) {
    for (const p of [
      `/organization/${id}`,
      `/agent/${id}`,
      `/schema/${id}`,
      `/product/${id}`,
      `/location/${id}`,
      `/purchase_order/${id}`,
      `/role/${id}/x`,
      `/purchase_order/x/version/${id}`,
    ]) {
      const r = await api.get(p);
      t.equal(r.status, 404, p.slice(0, 40));
      t.type(r.json.message, 'string');
    }
    const put = await api.put(`/organization/${id}`, { name: 'x' });
    t.equal(put.status, 404);
  }
  const before = a.t.node.ledger.pendingCount + a.t.node.ledger.head.blockNum;
  for (const id of ['o'.repeat(MAX_ID_BYTES + 1), 'é'.repeat(MAX_ID_BYTES / 2 + 1)]) {
    const r = await api.post(w('/organization'), { data: [{ id, name: 'Long' }] });
    t.equal(r.status, 400);
    t.match(r.json.message, /`data\[0\]\.id` is longer than 512 bytes/);
  }
  const s = await api.post(w('/schema'), { data: [{ name: HUGE, owner: 'nobody', properties: [] }] });
  t.equal(s.status, 400);
  t.equal(a.t.node.ledger.pendingCount + a.t.node.ledger.head.blockNum, before, 'nothing submitted');
});

t.test('C: over-long ids in paths, paging starts and heads are 400s in the Sawtooth shape', async (t) => {
  const l = a.t.ledgerUrl;
  const cases: Array<[string, number]> = [
    [`/batches/${LONG}`, 60],
    [`/blocks/${LONG}`, 60],
    [`/transactions/${LONG}`, 60],
    [`/batches?start=${LONG}`, 54],
    [`/transactions?start=${LONG}`, 54],
    [`/batches?start=${BIG}`, 54],
    [`/transactions?start=${BIG}`, 54],
    [`/blocks?start=${LONG}`, 54],
    [`/state?start=${LONG}`, 54],
    [`/batches?start=${encodeURIComponent(ACCENTS)}`, 54],
    [`/blocks?head=${LONG}`, 60],
    [`/batch_statuses?id=${LONG}`, 60],
  ];
  for (const [p, code] of cases) {
    const r = await fetch(l + p);
    const j = (await r.json()) as { error: { code: number } };
    t.equal(r.status, 400, p.slice(0, 40));
    t.equal(j.error.code, code, p.slice(0, 40));
  }
  const huge = await fetch(`${l}/batches/${HUGE}`);
  t.equal(huge.status, 414, 'a 10,000-character id makes the request target too long');
});
