/**
 * `__proto__` and the names Object.prototype carries (`constructor`, `toString`, `valueOf`,
 * `hasOwnProperty`) in JSON bodies: on the data API they are unknown fields (400, nothing
 * submitted), never a 500 and never a way to fill a required field through a prototype;
 * on the node API they are plain data or missing fields.
 */
import t, { type Test } from 'tap';
import { Api, acmeWithSchemas, w } from './helpers/data-api.js';
import { startApiNode, type ApiNode } from './helpers/node-api.js';
import WebSocket from 'ws';

let a: ApiNode;
let api: Api;

t.before(async () => {
  a = await startApiNode();
  api = new Api(a.t.dataUrl);
  await acmeWithSchemas(api);
});
t.teardown(() => a?.stop());

const ledgerMark = (): number => a.t.node.ledger.pendingCount + a.t.node.ledger.head.blockNum;

async function refusedB(t: Test, method: string, path: string, raw: string, message: RegExp): Promise<void> {
  const before = ledgerMark();
  const r = await api.call(method, path, undefined, raw);
  t.equal(r.status, 400, `${method} ${path} ${raw}`);
  t.match(r.json?.message, message);
  t.equal(ledgerMark(), before, 'nothing submitted');
}

t.test('B: __proto__ in a record is an unknown field (was a 500 on /organization)', async (t) => {
  await refusedB(
    t,
    'POST',
    w('/organization'),
    '{"data":[{"__proto__":{"id":"evil","name":"Evil"}}]}',
    /`data\[0\]\.__proto__` is not a known field/,
  );
  await refusedB(t, 'POST', w('/organization'), '{"data":[{"id":"evil","name":"Evil","__proto__":{"x":1}}]}', /__proto__` is not a known field/);
  await refusedB(t, 'PUT', w('/organization/acme'), '{"__proto__":{"name":"Renamed"}}', /`__proto__` is not a known field/);
  t.equal((await api.get('/organization/evil')).status, 404);
  t.equal((await api.get('/organization/acme')).json.name, 'Acme Corp');
});

t.test('B: a required field cannot come through __proto__ (a /role batch used to commit)', async (t) => {
  await refusedB(t, 'POST', w('/role/acme'), '{"data":[{"__proto__":{"name":"sneaky"}}]}', /__proto__` is not a known field/);
  t.equal((await api.get('/role/acme/sneaky')).status, 404);
});

for (const name of ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__defineGetter__', 'isPrototypeOf']) {
  t.test(`B: \`${name}\` is not a known field`, async (t) => {
    await refusedB(
      t,
      'POST',
      w('/role/acme'),
      JSON.stringify({ data: [{ name: `r-${name}`, [name]: 'x' }] }),
      new RegExp(`\`data\\[0\\]\\.${name}\` is not a known field`),
    );
    await refusedB(t, 'POST', w('/organization'), JSON.stringify({ data: [{ id: `o-${name}`, name: 'x', [name]: {} }] }), /is not a known field/);
    await refusedB(t, 'PUT', w('/organization/acme'), JSON.stringify({ [name]: 1 }), /is not a known field/);
  });
}

t.test('B: a data type named after a prototype member is unknown', async (t) => {
  for (const dt of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    const body = JSON.stringify({ data: [{ name: `s-${dt}`, owner: 'acme', properties: [{ name: 'p', data_type: dt }] }] });
    await refusedB(t, 'POST', w('/schema'), body, /unknown data_type/);
  }
});

t.test('A: prototype names in bodies are data or missing fields, never a 500', async (t) => {
  const { call, admin } = a;
  const reg = await call('POST', '/biome/register', { raw: '{"__proto__":{"username":"ghost","hashed_password":"x"}}' });
  t.equal(reg.status, 400);
  t.match((reg.body as { message: string }).message, /Missing field "username"/);
  const ctor = await call('POST', '/biome/register', { raw: '{"username":"u1","hashed_password":"x","constructor":{"name":"y"}}' });
  t.not(ctor.status, 500);

  // Registry metadata: `__proto__` is refused (it cannot be stored as data), other member names are plain keys.
  const node = { identity: 'proto-node', endpoints: ['tcp://proto:8044'], display_name: 'P', keys: [`02${'ab'.repeat(32)}`] };
  const withMeta = (meta: string): string => `${JSON.stringify(node).slice(0, -1)},"metadata":${meta}}`;
  const proto = await call('POST', '/registry/nodes', { auth: admin, raw: withMeta('{"__proto__":"x","region":"eu"}') });
  t.equal(proto.status, 400, proto.text);
  t.match((proto.body as { message: string }).message, /"__proto__" is reserved/);
  const put = await call('POST', '/registry/nodes', { auth: admin, raw: withMeta('{"constructor":"c","region":"eu"}') });
  t.equal(put.status, 200, put.text);
  const got = await call('GET', '/registry/nodes/proto-node', { auth: admin });
  t.equal(got.status, 200);
  t.same((got.body as { data: { metadata: Record<string, string> } }).data.metadata, { constructor: 'c', region: 'eu' });
  const f = await call('GET', `/registry/nodes?filter=${encodeURIComponent(JSON.stringify({ constructor: ['=', 'c'] }))}`, { auth: admin });
  t.equal(f.status, 200);
  t.equal((f.body as { data: unknown[] }).data.length, 1);
  const none = await call('GET', `/registry/nodes?filter=${encodeURIComponent(JSON.stringify({ toString: ['=', 'c'] }))}`, { auth: admin });
  t.equal((none.body as { data: unknown[] }).data.length, 0, 'an inherited member matches nothing');

  // A header named after a prototype member is just a header.
  const h = await fetch(`${a.t.ledgerUrl}/blocks?limit=1`, { headers: { constructor: 'x', __proto__: 'y' } as unknown as Record<string, string> });
  t.equal(h.status, 200);
});

t.test('values whose own toString is not a function are shown, not converted (a throw inside the websocket handler)', async (t) => {
  const ws = new WebSocket(`${a.t.ledgerUrl.replace(/^http/, 'ws')}/subscriptions`);
  await new Promise<void>((resolve, reject) => {
    ws.on('open', () => resolve());
    ws.on('error', reject);
  });
  t.teardown(() => ws.close());
  const frames: string[] = [];
  let closedWith = 0;
  ws.on('message', (d) => frames.push(d.toString()));
  ws.on('close', (code) => (closedWith = code));
  ws.send(JSON.stringify({ action: 'get_block_deltas', block_id: { toString: 1 } }));
  ws.send(JSON.stringify({ action: 'get_block_deltas', block_id: { valueOf: {}, toString: {} } }));
  for (let i = 0; i < 100 && frames.length < 2 && closedWith === 0; i++) await new Promise((r) => setTimeout(r, 20));
  t.equal(closedWith, 0, 'the socket stays open');
  t.same(
    frames.map((f) => JSON.parse(f)),
    [{ error: 'Unknown block id "{"toString":1}"' }, { error: 'Unknown block id "{"valueOf":{},"toString":{}}"' }],
  );

  const filter = encodeURIComponent(JSON.stringify({ region: [{ operator: { toString: 1 }, value: 'eu' }] }));
  const r = await a.call('GET', `/registry/nodes?filter=${filter}`, { auth: a.admin });
  t.equal(r.status, 400, r.text);
  t.match((r.body as { message: string }).message, /is not a valid operator/);
});
