/**
 * The data API and bad input: 400s naming the field (nothing submitted) for malformed
 * JSON, wrong types, unknown fields, missing required fields, bad GTIN/GLN, unknown
 * organizations and duplicate ids; INVALID batches with the contract's message for rules
 * that need state; 404s; `service_id`, `signer`, `wait`, event ids and POST /batches.
 */
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from './helpers/node.js';
import { Api, PREFIX_B, acmeWithSchemas, agentKey, clientBatch, expectCommitted, gln, gtin, newKey, postProtobuf, w } from './helpers/data-api.js';
import { HttpServer } from '../src/http/server.js';
import { messageErrorReply } from '../src/http/message-error.js';
import { registerDataApi } from '../src/data-api/index.js';

let node: TestNode;
let api: Api;
const PROPS = [{ name: 'GDSN_3_1', data_type: 'STRING', value: '<x/>' }];

t.before(async () => {
  node = await startTestNode();
  api = new Api(node.dataUrl);
  await acmeWithSchemas(api);
  await expectCommitted(api.post(w('/product'), { data: [{ product_id: gtin(1), owner: 'acme', properties: PROPS }] }), 'product 1');
});
t.teardown(() => node.stop());

/** Asserts a 400 whose message matches, and that no block was made by the request. */
async function refused(t: Test, p: Promise<{ status: number; json: any }>, message: RegExp | string, status = 400): Promise<void> {
  const before = node.node.ledger.pendingCount + node.node.ledger.head.blockNum;
  const r = await p;
  t.equal(r.status, status, typeof message === 'string' ? message : message.source);
  if (typeof message === 'string') t.equal(r.json.message, message);
  else t.match(r.json.message, message);
  t.equal(node.node.ledger.pendingCount + node.node.ledger.head.blockNum, before, 'nothing submitted');
}

t.test('malformed bodies', async (t) => {
  await refused(t, api.call('POST', '/product', undefined, '{"data": ['), /^Malformed JSON body/);
  await refused(t, api.call('POST', '/product', undefined, ''), 'A JSON request body is required');
  await refused(t, api.post('/product', [1, 2]), 'The request body must be a JSON object');
  await refused(t, api.post('/product', {}), '`data` is required');
  await refused(t, api.post('/product', { data: {} }), '`data` must be an array of records');
  await refused(t, api.post('/product', { data: [] }), '`data` must not be empty');
  await refused(t, api.post('/product', { data: [{}], extra: 1 }), /^`extra` is not a known field/);
  await refused(t, api.post('/product', { data: ['x'] }), '`data[0]` must be an object');
  await refused(t, api.put(`/product/${gtin(1)}`, 'x'), 'The request body must be a JSON object');
});

t.test('wrong types, unknown fields, missing required fields', async (t) => {
  const ok = { product_id: gtin(2), owner: 'acme', properties: PROPS };
  await refused(t, api.post('/product', { data: [{ ...ok, product_id: 12345 }] }), '`data[0].product_id` must be a string');
  await refused(t, api.post('/product', { data: [ok, { ...ok, product_id: gtin(3), properties: 'red' }] }), '`data[1].properties` must be an array');
  await refused(t, api.post('/product', { data: [{ ...ok, colour: 'red' }] }), '`data[0].colour` is not a known field');
  await refused(
    t,
    api.post('/product', { data: [{ ...ok, properties: [{ ...PROPS[0], unit: 'kg' }] }] }),
    '`data[0].properties[0].unit` is not a known field',
  );
  await refused(
    t,
    api.post('/product', { data: [{ ...ok, properties: [{ name: 'GDSN_3_1', data_type: 'STRING', value: 5 }] }] }),
    /^`data\[0\].properties\[0\]`: property GDSN_3_1 must be a string/,
  );
  await refused(
    t,
    api.post('/product', { data: [{ ...ok, properties: [{ name: 'x', data_type: 'COLOUR', value: 5 }] }] }),
    /^`data\[0\].properties\[0\]`: unknown data_type: COLOUR/,
  );
  await refused(t, api.post('/product', { data: [{ product_id: gtin(2), properties: PROPS }] }), '`data[0].owner` is required');
  await refused(t, api.post('/product', { data: [{ ...ok, owner: '' }] }), '`data[0].owner` must not be empty');
  await refused(t, api.post('/organization', { data: [{ id: 'x' }] }), '`data[0].name` is required');
  await refused(
    t,
    api.post('/organization/acme/agent', { data: [{ public_key: newKey().publicKey, active: 'yes' }] }),
    '`data[0].active` must be a boolean',
  );
  await refused(
    t,
    api.post('/organization/acme/agent', { data: [{ public_key: 'not-a-key' }] }),
    /^`data\[0\].public_key` must be a compressed secp256k1 public key/,
  );
  await refused(
    t,
    api.post('/organization/acme/agent', { data: [{ public_key: newKey().publicKey, roles: ['nope'] }] }),
    '`data[0].roles[0]`: unknown role nope for organization acme',
  );
  await refused(t, api.post('/role/acme', { data: [{ name: 'r', permissions: 'all' }] }), '`data[0].permissions` must be an array of strings');
  await refused(t, api.post('/schema', { data: [{ name: 's', owner: 'acme', properties: [] }] }), '`data[0].properties` must not be empty');
  await refused(
    t,
    api.post('/schema', { data: [{ name: 's', owner: 'acme', properties: [{ name: 'e', data_type: 'ENUM' }] }] }),
    /`data\[0\].properties\[0\]`: 'enum_options' cannot be empty/,
  );
  await refused(
    t,
    api.post('/purchase_order', {
      data: [{ uid: 'PO-9', buyer_org_id: 'acme', seller_org_id: 'acme', create_version_payload: { version_id: '1' } }],
    }),
    /^`data\[0\].create_version_payload.revision` is required/,
  );
  await refused(
    t,
    api.post('/purchase_order', { data: [{ uid: 'PO-9', buyer_org_id: 'acme', seller_org_id: 'acme', workflow_id: 'mine' }] }),
    /^`data\[0\].workflow_id`: unknown workflow mine/,
  );
});

t.test('bad GTIN and GLN', async (t) => {
  const p = (id: string): Promise<any> => api.post('/product', { data: [{ product_id: id, owner: 'acme', properties: PROPS }] });
  const bad = gtin(2).slice(0, -1) + String((Number(gtin(2).slice(-1)) + 1) % 10);
  await refused(t, p(bad), `\`data[0].product_id\`: Invalid gtin, check digit validation failed: ${bad}`);
  await refused(t, p('06141410000AB'), /^`data\[0\].product_id`: Invalid format, GTIN identifiers only contain numbers/);
  await refused(t, p('12345670'), /GTIN-8 is not supported/);
  await refused(t, p('123456789'), /Invalid length for GTIN identifier/);
  const l = (id: string): Promise<any> => api.post('/location', { data: [{ location_id: id, owner: 'acme', properties: [] }] });
  const badGln = gln(7).slice(0, -1) + String((Number(gln(7).slice(-1)) + 1) % 10);
  await refused(t, l(badGln), /^`data\[0\].location_id`: Invalid GLN/);
  await refused(t, l('06141410000'), /^`data\[0\].location_id`: Invalid GLN/);
});

t.test('unknown organizations', async (t) => {
  await refused(
    t,
    api.post('/product', { data: [{ product_id: gtin(2), owner: 'nobody', properties: PROPS }] }),
    '`data[0].owner`: unknown organization nobody',
  );
  await refused(t, api.post('/location', { data: [{ location_id: gln(2), owner: 'nobody' }] }), '`data[0].owner`: unknown organization nobody');
  await refused(
    t,
    api.post('/schema', { data: [{ name: 's', owner: 'nobody', properties: [{ name: 'a', data_type: 'STRING' }] }] }),
    '`data[0].owner`: unknown organization nobody',
  );
  await refused(
    t,
    api.post('/purchase_order', { data: [{ uid: 'PO-9', buyer_org_id: 'acme', seller_org_id: 'nobody' }] }),
    '`data[0].seller_org_id`: unknown organization nobody',
  );
  await refused(t, api.post('/organization/nobody/agent', { data: [{ public_key: newKey().publicKey }] }), 'Organization nobody not found', 404);
  await refused(t, api.post('/role/nobody', { data: [{ name: 'r' }] }), 'Organization nobody not found', 404);
  t.equal((await api.get('/role/nobody')).status, 404);
  t.equal((await api.get('/organization/nobody/agent')).status, 404);
});

t.test('duplicate ids', async (t) => {
  const item = { product_id: gtin(2), owner: 'acme', properties: PROPS };
  await refused(t, api.post('/product', { data: [item, item] }), `\`data[1].product_id\`: ${gtin(2)} appears more than once in this request`);
  await refused(t, api.post('/product', { data: [{ ...item, product_id: gtin(1) }] }), `\`data[0].product_id\`: product ${gtin(1)} already exists`);
  await refused(t, api.post('/organization', { data: [{ id: 'acme', name: 'Again' }] }), '`data[0].id`: organization acme already exists');
  await refused(
    t,
    api.post('/organization', {
      data: [
        { id: 'o1', name: 'O1' },
        { id: 'o2', name: 'O2' },
      ],
    }),
    /^`data`: one organization per request/,
  );
  await refused(t, api.post('/organization', { data: [{ id: 'other', name: 'Other' }] }), /^`signer`: .* is already an agent of organization acme/);
  await refused(t, api.post('/role/acme', { data: [{ name: 'catalog' }] }), '`data[0].name`: role catalog already exists in organization acme');
  await refused(
    t,
    api.post('/schema', { data: [{ name: 'gs1_product', owner: 'acme', properties: [{ name: 'a', data_type: 'STRING' }] }] }),
    '`data[0].name`: schema gs1_product already exists',
  );
});

t.test('path and body disagree; unknown records', async (t) => {
  await refused(
    t,
    api.put(`/product/${gtin(1)}`, { product_id: gtin(2), properties: PROPS }),
    `\`product_id\` (${gtin(2)}) does not match the path (${gtin(1)})`,
  );
  await refused(t, api.put(`/product/${gtin(1)}`, { owner: 'beta', properties: PROPS }), '`owner` cannot change (the product belongs to acme)');
  await refused(t, api.put(`/product/${gtin(5)}`, { properties: PROPS }), `Product ${gtin(5)} not found`, 404);
  await refused(t, api.del(`/location/${gln(5)}`), `Location ${gln(5)} not found`, 404);
  await refused(
    t,
    api.put('/schema/gs1_product', { properties: [{ name: 'GDSN_3_1', data_type: 'STRING', required: true, description: 'trade item XML' }] }),
    '`properties` adds no new property definition to the schema',
  );
  await refused(t, api.put('/purchase_order/PO-0', { workflow_state: 'issued' }), 'Purchase order PO-0 not found', 404);
  t.equal((await api.get('/product/00000')).status, 404);
  t.match((await api.get('/purchase_order/nope')).json, { message: 'Purchase order nope not found' });
  t.equal((await api.get('/nowhere')).status, 404);
  t.equal((await api.call('PATCH', '/product')).status, 405);
});

t.test('rules that need state: INVALID with the contract message', async (t) => {
  // The GTIN must hold acme's company prefix.
  const foreign = gtin(9, PREFIX_B);
  const r1 = await api.post(w('/product'), { data: [{ product_id: foreign, owner: 'acme', properties: PROPS }] });
  t.equal(r1.json.status, 'INVALID');
  t.match(r1.json.invalid_transactions[0].message, /^The agents organization does not own the GS1 company prefix in the GTIN product_id/);
  // A required schema property is missing.
  const r2 = await api.post(w('/product'), { data: [{ product_id: gtin(4), owner: 'acme', properties: [] }] });
  t.equal(r2.json.status, 'INVALID');
  t.equal(r2.json.invalid_transactions[0].message, "Missing required field 'GDSN_3_1' of type 'String'");
  // One bad record makes the whole call fail: nothing of it is written.
  const r3 = await api.post(w('/product'), {
    data: [
      { product_id: gtin(6), owner: 'acme', properties: PROPS },
      { product_id: gtin(7), owner: 'acme', properties: [] },
    ],
  });
  t.equal(r3.json.status, 'INVALID');
  t.equal((await api.get(`/product/${gtin(6)}`)).status, 404, 'all or nothing');
  // Schema definitions cannot change.
  const r4 = await api.put(w('/schema/gs1_product'), { properties: [{ name: 'GDSN_3_1', data_type: 'NUMBER' }] });
  t.equal(r4.json.status, 'INVALID');
  t.equal(r4.json.invalid_transactions[0].message, 'Schema already has PropertyDefinition with name GDSN_3_1');
});

t.test('wait, batch statuses and event ids', async (t) => {
  const r = await api.post('/product', { data: [{ product_id: gtin(8), owner: 'acme', properties: PROPS }] });
  t.equal(r.status, 202, 'answered at once');
  t.same(Object.keys(r.json), ['link']);
  t.same(Object.keys(r.json.link), ['batch_id', 'event_id']);
  const { batch_id, event_id } = r.json.link;
  const s = await api.get(`/batch_statuses?id=${event_id}&wait=10`);
  t.match(s.json, { data: [{ batch_id, event_id, status: 'COMMITTED', invalid_transactions: [] }] });
  t.equal(s.json.link, `${node.dataUrl}/batch_statuses?id=${event_id}&wait=10`);
  t.equal((await api.get(`/product/${gtin(8)}`)).status, 200, 'readable once COMMITTED');
  const byBatch = await api.get(`/batch_statuses?id=${batch_id}&wait`);
  t.match(byBatch.json.data, [{ batch_id, event_id, status: 'COMMITTED' }]);
  const zero = '0'.repeat(128);
  const unknownEvent = randomUUID();
  const u = await api.get(`/batch_statuses?id=${zero},${unknownEvent}&wait=false`);
  // A field without a value is left out, never null.
  t.same(u.json.data, [
    { batch_id: zero, status: 'UNKNOWN', invalid_transactions: [] },
    { event_id: unknownEvent, status: 'UNKNOWN', invalid_transactions: [] },
  ]);
  t.notOk('event_id' in u.json.data[0], 'no event_id for a batch with no event');
  t.notOk('batch_id' in u.json.data[1], 'no batch_id for an unknown event id');
  t.equal((await api.get('/batch_statuses')).status, 400);
  t.match((await api.get('/batch_statuses?id=xyz')).json.message, /neither a batch id .* nor an event id/);

  // wait=N on a mutation: 200 and the verdict once committed.
  const r2 = await api.post('/product?wait=10', { data: [{ product_id: gtin(10), owner: 'acme', properties: PROPS }] });
  t.equal(r2.status, 200);
  t.equal(r2.json.status, 'COMMITTED');
  // wait=0 answers at once.
  const r3 = await api.del(`/product/${gtin(10)}?wait=0`);
  t.equal(r3.status, 202);
  t.same(Object.keys(r3.json), ['link']);
});

t.test('POST /batches on the data API', async (t) => {
  const key = agentKey(node.dataDir, 'extra');
  const { id, body } = clientBatch(key, [{ action: 'create_role', org_id: 'acme', name: 'x', permissions: [] }]);
  const posted = await postProtobuf(node.dataUrl, body, '?wait=10');
  t.equal(posted.status, 200);
  t.equal(posted.json.link.batch_id, id);
  t.equal(posted.json.status, 'INVALID', 'the key is no agent');
  t.match(posted.json.invalid_transactions[0].message, /The signer is not an Agent/);
  // Two batches in one list: one event, both ids.
  const a = clientBatch(key, [{ action: 'create_role', org_id: 'acme', name: 'y', permissions: [] }], true);
  const b = clientBatch(key, [{ action: 'create_role', org_id: 'acme', name: 'z', permissions: [] }]);
  const two = Buffer.concat([a.body, b.body]); // BatchLists concatenate field by field
  const r = await postProtobuf(node.dataUrl, two);
  t.equal(r.status, 202);
  t.equal(r.json.link.batch_id, `${a.id},${b.id}`);
  const s = await api.get(`/batch_statuses?id=${r.json.link.event_id}&wait=10`);
  t.same(
    s.json.data.map((e: any) => e.batch_id),
    [a.id, b.id],
  );

  const raw = (bytes: Buffer, ct: string): Promise<Response> =>
    fetch(`${node.dataUrl}/batches`, { method: 'POST', headers: { 'content-type': ct }, body: new Uint8Array(bytes) });
  t.equal((await raw(Buffer.alloc(0), 'application/octet-stream')).status, 400);
  const garbage = await raw(Buffer.from('not a batch list'), 'application/octet-stream');
  t.equal(garbage.status, 400);
  t.match((await garbage.json()).message, /rejected/);
  t.equal((await raw(Buffer.from('{}'), 'application/json')).status, 415);
  const tampered = Buffer.from(body);
  tampered.writeUInt8(tampered.readUInt8(tampered.length - 3) ^ 1, tampered.length - 3);
  t.equal((await raw(tampered, 'application/octet-stream')).status, 400, 'bad signature');

  // A batch sent through the ledger gateway has no event id.
  const c = clientBatch(key, [{ action: 'create_role', org_id: 'acme', name: 'c', permissions: [] }]);
  t.equal((await postProtobuf(node.ledgerUrl, c.body)).status, 202);
  const viaC = (await api.get(`/batch_statuses?id=${c.id}&wait=10`)).json.data;
  t.match(viaC, [{ batch_id: c.id, status: 'INVALID' }]);
  t.notOk('event_id' in viaC[0], 'event_id left out');
});

t.test('signer and service_id', async (t) => {
  await refused(t, api.post(`/role/acme?signer=${newKey().publicKey}`, { data: [{ name: 'r' }] }), /^`signer`: this node holds no key for/);
  await refused(t, api.post('/role/acme?signer=abc', { data: [{ name: 'r' }] }), /^`signer` must be a compressed secp256k1 public key/);
  await refused(t, api.get('/product?service_id=c1::s1'), 'Service c1::s1 not found', 404);
  await refused(t, api.post('/product?service_id=c1::s1', { data: [{ product_id: gtin(2), owner: 'acme' }] }), 'Service c1::s1 not found', 404);
  await refused(t, api.get('/batch_statuses?id=x&service_id=c1::s1'), 'Service c1::s1 not found', 404);
  await refused(t, api.get('/product?service_id=plain'), 'Must provide a fully-qualified service_id: <circuit_id>::<service_id>');
  await refused(
    t,
    api.post('/product', { data: [{ product_id: gtin(2), owner: 'acme', service_id: 'c1::s1' }] }),
    "`data[0].service_id` (c1::s1) does not match the request's service_id (none)",
  );

  // A node that knows a circuit service: records carry its service_id.
  const { config, db, ledger, nodeSigner } = node.node;
  const server = new HttpServer({ name: 'data2', maxBodyBytes: 1 << 20, errorReply: messageErrorReply });
  registerDataApi(server, { config, db, ledger, nodeSigner, services: (id) => (id === 'c1::s1' ? { ledger, db } : undefined) });
  const port = await server.listen('127.0.0.1', 0);
  t.teardown(() => server.close(0));
  const api2 = new Api(`http://127.0.0.1:${port}`);
  const list = await api2.get('/product?service_id=c1::s1&limit=1');
  t.equal(list.json.data[0].service_id, 'c1::s1');
  t.equal(list.json.paging.next, '/product?limit=1&service_id=c1%3A%3As1&offset=1');
  const made = await api2.post('/product?service_id=c1::s1&wait=10', {
    data: [{ product_id: gtin(11), owner: 'acme', properties: PROPS, service_id: 'c1::s1' }],
  });
  t.equal(made.json.status, 'COMMITTED');
  const po = await api2.get('/organization/acme/agent?service_id=c1::s1');
  t.equal(po.json.data[0].roles[0].service_id, 'c1::s1');
  t.equal((await api2.get('/product?service_id=c2::s1')).status, 404);
});
