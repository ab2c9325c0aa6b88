/**
 * Data API field choices the spec settles: a property definition's `value` is stored
 * and returned as given, and a location's `owner` may name an agent's public key (it
 * stands for the agent's organization, which is what the ledger stores and reads return).
 */
import t from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import { Api, acmeWithSchemas, agentKey, expectCommitted, gln, newKey, w } from './helpers/data-api.js';

let node: TestNode;
let api: Api;
let NODE_KEY: string;

t.before(async () => {
  node = await startTestNode();
  api = new Api(node.dataUrl);
  NODE_KEY = node.node.nodeSigner.publicKey;
  await acmeWithSchemas(api);
});
t.teardown(() => node.stop());

t.test('property definitions keep their value', async (t) => {
  const properties = [
    { name: 'grade', data_type: 'STRING', description: 'quality grade', required: false, value: 'A' },
    { name: 'count', data_type: 'NUMBER', value: 3 },
    { name: 'tags', data_type: 'STRING', value: { default: ['x', 'y'] } },
    { name: 'plain', data_type: 'BOOLEAN' },
  ];
  await expectCommitted(api.post(w('/schema'), { data: [{ name: 'valued', owner: 'acme', properties }] }), 'schema with values');
  const s = await api.get('/schema/valued');
  t.equal(s.status, 200);
  const byName = new Map<string, any>(s.json.properties.map((p: any) => [p.name, p]));
  t.equal(byName.get('grade').value, 'A');
  t.equal(byName.get('count').value, 3);
  t.same(byName.get('tags').value, { default: ['x', 'y'] });
  t.notOk('value' in byName.get('plain'), 'no value given, none returned');
  // The whole list sent back with one more definition adds just that one.
  const more = [...s.json.properties, { name: 'size', data_type: 'STRING', value: 'M' }];
  await expectCommitted(api.put(w('/schema/valued'), { properties: more }), 'schema update');
  const after = (await api.get('/schema/valued')).json.properties;
  t.equal(after.length, 5);
  t.equal(after.find((p: any) => p.name === 'size').value, 'M');
  t.equal(after.find((p: any) => p.name === 'grade').value, 'A', 'kept');
});

t.test('location owner: an organization id or an agent public key', async (t) => {
  const props = [
    { name: 'locationDescription', data_type: 'STRING', value: 'Dock' },
    { name: 'locationType', data_type: 'ENUM', value: 0 },
  ];
  await expectCommitted(api.post(w('/location'), { data: [{ location_id: gln(1), owner: 'acme', properties: props }] }), 'owner by org id');
  await expectCommitted(api.post(w('/location'), { data: [{ location_id: gln(2), owner: NODE_KEY, properties: props }] }), 'owner by agent key');
  t.equal((await api.get(`/location/${gln(1)}`)).json.owner, 'acme');
  t.equal((await api.get(`/location/${gln(2)}`)).json.owner, 'acme', "the agent's organization is stored and returned");
  // The owner may be named the same way on update.
  await expectCommitted(api.put(w(`/location/${gln(2)}`), { owner: NODE_KEY, properties: props }), 'update naming the agent key');

  const stranger = newKey().publicKey;
  const before = node.node.ledger.head.blockNum + node.node.ledger.pendingCount;
  const r = await api.post('/location', { data: [{ location_id: gln(3), owner: stranger, properties: props }] });
  t.equal(r.status, 400);
  t.equal(r.json.message, `\`data[0].owner\`: ${stranger} is neither an organization nor an agent's public key`);
  const r2 = await api.post('/location', { data: [{ location_id: gln(3), owner: 'nobody', properties: props }] });
  t.equal(r2.status, 400);
  t.equal(r2.json.message, '`data[0].owner`: unknown organization nobody');
  t.equal(node.node.ledger.head.blockNum + node.node.ledger.pendingCount, before, 'nothing submitted');
  t.equal((await api.get(`/location/${gln(3)}`)).status, 404);
});

t.test('ids with control characters are refused by the contract', async (t) => {
  const signer = agentKey(node.dataDir, 'ctl-admin');
  const r = await api.post(w('/organization', signer), { data: [{ id: 'acme\u0005x', name: 'Lookalike' }] });
  t.equal(r.status, 200);
  t.equal(r.json.status, 'INVALID');
  t.equal(r.json.invalid_transactions[0].message, 'Organization ID must not contain control characters: "acme\\u0005x"');
  t.equal((await api.get('/organization')).json.data.length, 1, 'only acme');
  const po = await api.post(w('/purchase_order'), { data: [{ uid: 'PO-X\u00051', buyer_org_id: 'acme', seller_org_id: 'acme' }] });
  t.equal(po.json.status, 'INVALID');
  t.match(po.json.invalid_transactions[0].message, /^Purchase order UID must not contain control characters/);
});
