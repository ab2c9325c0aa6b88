/**
 * The data API over real HTTP: a whole supply chain. Two organizations with agents and
 * roles, the GS1 schemas, products and locations with properties, a purchase order
 * through the collaborative workflow to `confirmed` with an accepted version and three
 * revisions (one of them from a client-signed, Sabre-wrapped batch at POST /batches),
 * then closed; and the permission failures of agents without the needed role.
 */
import t, { type Test } from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import {
  Api,
  CATALOG_PERMISSIONS,
  LOCATION_SCHEMA,
  PREFIX_A,
  PREFIX_B,
  PRODUCT_SCHEMA,
  agentKey,
  clientBatch,
  expectCommitted,
  gln,
  gtin,
  newKey,
  postProtobuf,
  w,
} from './helpers/data-api.js';
import type { Signer } from '../src/crypto/secp256k1.js';

const XML = (n: number): string => `<order:orderMessage n="${n}"/>`;

let node: TestNode;
let api: Api;
let NODE_KEY: string;
let BETA_ADMIN: Signer; // signs as beta's admin through ?signer=
let BUYER: Signer; // acme agent with role po_partner, through ?signer=
let CLERK: Signer; // acme agent without roles, through ?signer= and as a client
let SELLER: Signer; // beta agent with role po_partner: client-signed batches only

t.before(async () => {
  node = await startTestNode();
  api = new Api(node.dataUrl);
  NODE_KEY = node.node.nodeSigner.publicKey;
  BETA_ADMIN = agentKey(node.dataDir, 'beta-admin');
  BUYER = agentKey(node.dataDir, 'acme-buyer');
  CLERK = agentKey(node.dataDir, 'acme-clerk');
  SELLER = newKey();
});
t.teardown(() => node.stop());

/** Posts a client-signed (by default Sabre-wrapped) batch to the data API and waits for its verdict. */
async function clientSubmit(t: Test, signer: Signer, action: Record<string, unknown> & { action: string }, sabre = true): Promise<any> {
  const { id, body } = clientBatch(signer, [action], sabre);
  const posted = await postProtobuf(node.dataUrl, body);
  t.equal(posted.status, 202, `POST /batches ${action.action}`);
  t.equal(posted.json.link.batch_id, id, 'link names the client batch');
  const s = await api.get(`/batch_statuses?id=${posted.json.link.event_id}&wait=10`);
  t.equal(s.json.data.length, 1);
  t.equal(s.json.data[0].batch_id, id);
  return s.json.data[0];
}

t.test('two organizations with agents and roles', async (t) => {
  const acme = await expectCommitted(
    api.post(w('/organization'), {
      data: [
        {
          id: 'acme',
          name: 'Acme Corp',
          alternate_ids: [`gs1_company_prefix:${PREFIX_A}`],
          metadata: [{ country: 'US' }],
          locations: [gln(1)],
        },
      ],
    }),
    'acme',
  );
  t.match(acme.json.link, { batch_id: /^[0-9a-f]{128}$/, event_id: /^[0-9a-f-]{36}$/ });
  await expectCommitted(
    api.post(w('/organization', BETA_ADMIN), {
      data: [{ id: 'beta', name: 'Beta Ltd', alternate_ids: [{ id_type: 'gs1_company_prefix', id: PREFIX_B }] }],
    }),
    'beta',
  );

  const org = await api.get('/organization/acme');
  t.equal(org.status, 200);
  t.match(org.json, {
    id: 'acme',
    name: 'Acme Corp',
    alternate_ids: [`gs1_company_prefix:${PREFIX_A}`],
    locations: [gln(1)],
    metadata: [{ country: 'US' }],
  });
  t.type(org.json.last_updated, 'number');
  t.notOk('service_id' in org.json, 'no service_id on the default ledger');
  const orgs = await api.get('/organization');
  t.same(
    orgs.json.data.map((o: any) => o.id),
    ['acme', 'beta'],
  );
  t.equal(orgs.json.paging.total, 2);

  await expectCommitted(
    api.post(w('/role/acme'), {
      data: [
        { name: 'catalog', description: 'Catalog data', permissions: CATALOG_PERMISSIONS },
        { name: 'po_partner', description: 'Purchase orders', permissions: ['po::partner'] },
      ],
    }),
    'acme roles',
  );
  await expectCommitted(api.post(w('/role/beta', BETA_ADMIN), { data: [{ name: 'po_partner', permissions: ['po::partner'] }] }), 'beta role');
  await expectCommitted(api.put(w(`/organization/acme/agent/${NODE_KEY}`), { roles: ['admin', 'catalog'] }), 'node key gets catalog');
  await expectCommitted(
    api.post(w('/organization/acme/agent'), {
      data: [
        { public_key: BUYER.publicKey, roles: ['po_partner'] },
        { public_key: CLERK.publicKey, active: true, metadata: [{ email: 'clerk@acme.example' }] },
      ],
    }),
    'acme agents',
  );
  await expectCommitted(
    api.post(w('/organization/beta/agent', BETA_ADMIN), { data: [{ public_key: SELLER.publicKey, roles: ['po_partner'] }] }),
    'beta agent',
  );

  const agents = await api.get('/organization/acme/agent');
  t.equal(agents.json.paging.total, 3);
  const node = agents.json.data.find((a: any) => a.public_key === NODE_KEY);
  t.same(
    node.roles.map((r: any) => r.name),
    ['admin', 'catalog'],
    'roles answered as Role objects',
  );
  t.match(node.roles[1], { org_id: 'acme', description: 'Catalog data', permissions: CATALOG_PERMISSIONS });
  const clerk = await api.get(`/organization/acme/agent/${CLERK.publicKey}`);
  t.match(clerk.json, { public_key: CLERK.publicKey, org_id: 'acme', active: true, roles: [], metadata: { email: 'clerk@acme.example' } });
  const seller = await api.get(`/organization/beta/agent/${SELLER.publicKey}`);
  t.match(seller.json.roles, [{ name: 'po_partner', org_id: 'beta' }]);
  t.same((await api.get(`/agent/${SELLER.publicKey}`)).json, seller.json, 'upstream flat path');
  t.equal((await api.get('/agent')).json.paging.total, 5);
  t.equal((await api.get(`/organization/acme/agent/${SELLER.publicKey}`)).status, 404, 'agent of another organization');

  const roles = await api.get('/role/acme');
  t.same(
    roles.json.data.map((r: any) => r.name),
    ['admin', 'catalog', 'po_partner'],
  );
  t.equal(roles.json.paging.total, 3);
  const role = await api.get('/role/acme/po_partner');
  t.equal(role.json.data.length, 1, 'role fetch answers data + paging');
  t.match(role.json, { data: [{ name: 'po_partner', permissions: ['po::partner'] }], paging: { total: 1 } });

  // Update and delete a role; update an organization.
  await expectCommitted(api.post(w('/role/acme'), { data: [{ name: 'temp', permissions: ['pike::can-create-agents'] }] }), 'temp role');
  await expectCommitted(api.put(w('/role/acme/temp'), { description: 'Temporary', permissions: [] }), 'temp role updated');
  t.match((await api.get('/role/acme/temp')).json.data[0], { description: 'Temporary', permissions: [] });
  await expectCommitted(api.del(w('/role/acme/temp')), 'temp role deleted');
  t.equal((await api.get('/role/acme/temp')).status, 404);
  await expectCommitted(api.put(w('/organization/beta', BETA_ADMIN), { name: 'Beta Limited', metadata: [{ country: 'DE' }] }), 'beta renamed');
  t.match((await api.get('/organization/beta')).json, { name: 'Beta Limited', metadata: [{ country: 'DE' }] });

  // Beta's admin as a client: a plain (not Sabre-wrapped) Pike transaction.
  const plain = await clientSubmit(t, BETA_ADMIN, { action: 'create_role', org_id: 'beta', name: 'auditor', permissions: [] }, false);
  t.equal(plain.status, 'COMMITTED');
  t.equal((await api.get('/role/beta/auditor')).status, 200);
});

t.test('schemas, products and locations with properties', async (t) => {
  await expectCommitted(api.post(w('/schema'), { data: [PRODUCT_SCHEMA, LOCATION_SCHEMA] }), 'schemas');
  // The whole list sent back plus one new definition: only the new one is appended.
  const color = { name: 'color', data_type: 'STRING', description: 'Colour' };
  await expectCommitted(api.put(w('/schema/gs1_product'), { ...PRODUCT_SCHEMA, properties: [...PRODUCT_SCHEMA.properties, color] }), 'schema update');
  const schema = await api.get('/schema/gs1_product');
  t.same(
    schema.json.properties.map((p: any) => p.name),
    ['GDSN_3_1', 'weight', 'color'],
  );
  t.match(schema.json.properties[1], { data_type: 'NUMBER', number_exponent: -3, required: false });
  t.equal((await api.get('/schema')).json.paging.total, 2);

  const props = [
    { name: 'GDSN_3_1', data_type: 'STRING', value: '<tradeItem/>' },
    { name: 'weight', data_type: 'NUMBER', value: 1250 },
  ];
  await expectCommitted(
    api.post(w('/product'), {
      data: [
        { product_id: gtin(1), owner: 'acme', properties: props },
        { product_id: gtin(2), product_namespace: 'GS1', owner: 'acme', properties: props.slice(0, 1) },
      ],
    }),
    'products',
  );
  const p1 = await api.get(`/product/${gtin(1)}`);
  t.match(p1.json, { product_id: gtin(1), product_namespace: 'GS1', owner: 'acme', properties: props });
  await expectCommitted(
    api.put(w(`/product/${gtin(1)}`), { properties: [...props, { name: 'color', data_type: 'STRING', value: 'red' }] }),
    'product update',
  );
  t.equal((await api.get(`/product/${gtin(1)}`)).json.properties.length, 3);
  await expectCommitted(api.del(w(`/product/${gtin(2)}`)), 'product delete');
  t.equal((await api.get(`/product/${gtin(2)}`)).status, 404);
  t.equal((await api.get('/product')).json.paging.total, 1);

  const where = [
    { name: 'locationDescription', data_type: 'STRING', value: 'Main warehouse' },
    { name: 'locationType', data_type: 'ENUM', value: 2 },
    { name: 'latLong', data_type: 'LAT_LONG', value: { latitude: 44977753, longitude: -93265015 } },
  ];
  await expectCommitted(api.post(w('/location'), { data: [{ location_id: gln(1), owner: 'acme', properties: where }] }), 'location');
  const loc = await api.get(`/location/${gln(1)}`);
  t.match(loc.json, { location_id: gln(1), location_namespace: 'GS1', owner: 'acme', properties: where });
  await expectCommitted(
    api.put(w(`/location/${gln(1)}`), { properties: [...where, { name: 'open', data_type: 'BOOLEAN', value: true }] }),
    'location update',
  );
  t.equal((await api.get(`/location/${gln(1)}`)).json.properties.length, 4);
  t.equal((await api.get('/location')).json.paging.total, 1);
});

t.test('an agent without the role is refused', async (t) => {
  const product = { product_id: gtin(3), owner: 'acme', properties: [{ name: 'GDSN_3_1', data_type: 'STRING', value: '<x/>' }] };
  const r = await api.post(w('/product', CLERK), { data: [product] });
  t.equal(r.status, 200);
  t.equal(r.json.status, 'INVALID');
  const msg = `The signer "${CLERK.publicKey}" does not have the "product::can-create-product" permission for org "acme"`;
  t.equal(r.json.invalid_transactions[0].message, msg);
  const s = await api.get(`/batch_statuses?id=${r.json.link.event_id},${r.json.link.batch_id}`);
  t.match(s.json.data, [
    { batch_id: r.json.link.batch_id, event_id: r.json.link.event_id, status: 'INVALID', invalid_transactions: [{ message: msg }] },
    { batch_id: r.json.link.batch_id, event_id: r.json.link.event_id, status: 'INVALID' },
  ]);
  t.equal((await api.get(`/product/${gtin(3)}`)).status, 404, 'nothing written');

  // The same agent as a client: a Sabre-wrapped location create, refused by the contract.
  const loc = await clientSubmit(t, CLERK, { action: 'create_location', location_id: gln(2), owner: 'acme', properties: [] });
  t.equal(loc.status, 'INVALID');
  t.equal(
    loc.invalid_transactions[0].message,
    `The signer "${CLERK.publicKey}" does not have the "location::can-create-location" permission for org "acme"`,
  );

  // Without a purchase-order alias the clerk cannot create an order either.
  const po = await api.post(w('/purchase_order', CLERK), { data: [{ uid: 'PO-X', buyer_org_id: 'acme', seller_org_id: 'beta' }] });
  t.equal(po.json.status, 'INVALID');
  t.match(po.json.invalid_transactions[0].message, /permission/);

  // A key that is no agent at all.
  const stranger = await clientSubmit(t, newKey(), { action: 'create_role', org_id: 'acme', name: 'x', permissions: [] });
  t.equal(stranger.status, 'INVALID');
  t.match(stranger.invalid_transactions[0].message, /The signer is not an Agent/);
});

t.test('purchase order: collaborative workflow to confirmed, three revisions, closed', async (t) => {
  await expectCommitted(
    api.post(w('/purchase_order', BUYER), {
      data: [
        {
          uid: 'PO-1',
          workflow_state: 'create',
          buyer_org_id: 'acme',
          seller_org_id: 'beta',
          alternate_ids: ['po_number:4500001'],
          create_version_payload: { version_id: '1', workflow_state: 'create', revision: { order_xml_v3_4: XML(1) } },
        },
      ],
    }),
    'PO created',
  );
  let po = (await api.get('/purchase_order/PO-1')).json;
  t.match(po, {
    uid: 'PO-1',
    workflow_state: 'issued',
    buyer_org_id: 'acme',
    seller_org_id: 'beta',
    is_closed: false,
    alternate_ids: ['po_number:4500001'],
    workflow_id: 'built-in::collaborative::v1',
    versions: [{ version_id: '1', workflow_state: 'proposed', is_draft: false, current_revision_number: 1, revisions: [1] }],
  });
  t.type(po.created_at, 'number');
  t.equal((await api.get('/purchase_order/po_number:4500001')).json.uid, 'PO-1', 'fetch by alternate id');

  // Revision 2: the seller's client-signed, Sabre-wrapped batch through POST /batches.
  const rev2 = await clientSubmit(t, SELLER, {
    action: 'update_version',
    po_uid: 'PO-1',
    version_id: '1',
    workflow_state: 'proposed',
    revision: { order_xml_v3_4: XML(2) },
  });
  t.equal(rev2.status, 'COMMITTED', 'Sabre-wrapped update executed');

  // Revision 3: the buyer through the JSON API, moving the version to modified.
  await expectCommitted(
    api.put(w('/purchase_order/PO-1/version/1', BUYER), { data: [{ workflow_state: 'modified', revision: { order_xml_v3_4: XML(3) } }] }),
    'revision 3',
  );
  // Confirm with version 1 accepted; no revision given, so none is added.
  await expectCommitted(
    api.put(w('/purchase_order/PO-1', BUYER), {
      workflow_state: 'confirmed',
      accepted_version_number: '1',
      version_updates: [{ version_id: '1', workflow_state: 'accepted' }],
    }),
    'confirmed',
  );
  po = (await api.get('/purchase_order/PO-1')).json;
  t.match(po, {
    workflow_state: 'confirmed',
    accepted_version_number: '1',
    is_closed: false,
    versions: [{ version_id: '1', workflow_state: 'accepted', current_revision_number: 3, revisions: [1, 2, 3] }],
  });

  const versions = await api.get('/purchase_order/PO-1/version');
  t.equal(versions.json.paging.total, 1);
  const version = await api.get('/purchase_order/PO-1/version/1');
  t.match(version.json, { data: [{ version_id: '1', workflow_state: 'accepted' }], paging: { total: 1 } });
  const revisions = await api.get('/purchase_order/PO-1/version/1/revision');
  t.equal(revisions.json.paging.total, 3);
  t.same(
    revisions.json.data.map((r: any) => [r.revision_number, r.submitter, r.order_xml_v3_4]),
    [
      [1, BUYER.publicKey, XML(1)],
      [2, SELLER.publicKey, XML(2)],
      [3, BUYER.publicKey, XML(3)],
    ],
  );
  t.match((await api.get('/purchase_order/PO-1/version/1/revision/2')).json, { revision_number: 2, submitter: SELLER.publicKey });
  t.equal((await api.get('/purchase_order/PO-1/version/1/revision/latest')).json.revision_number, 3);
  t.equal((await api.get('/purchase_order/PO-1/version/1/revision/9')).status, 404);

  // The contract's workflow rules: a confirmed order cannot go back to proposed.
  const back = await api.put(w('/purchase_order/PO-1', BUYER), { workflow_state: 'proposed' });
  t.equal(back.json.status, 'INVALID');
  t.match(back.json.invalid_transactions[0].message, /does not have the correct permissions .* to a status of proposed/);

  // Close: no accepted version any more, the version leaves `accepted`.
  await expectCommitted(
    api.put(w('/purchase_order/PO-1', BUYER), {
      workflow_state: 'closed',
      is_closed: true,
      accepted_version_number: '',
      version_updates: [{ version_id: '1', workflow_state: 'obsolete' }],
    }),
    'closed',
  );
  po = (await api.get('/purchase_order/PO-1')).json;
  t.match(po, {
    workflow_state: 'closed',
    is_closed: true,
    alternate_ids: ['po_number:4500001'],
    versions: [{ workflow_state: 'obsolete', revisions: [1, 2, 3] }],
  });
  t.notOk('accepted_version_number' in po);
  t.equal((await api.get('/purchase_order?is_open=false')).json.paging.total, 1);
  t.equal((await api.get('/purchase_order?is_open=true')).json.paging.total, 0);
  t.equal((await api.get('/purchase_order?buyer_org_id=acme&seller_org_id=beta')).json.data[0].uid, 'PO-1');
});
