/**
 * The data API on a circuit's state service, across three node processes: the namespace
 * rules refuse a carried contract's batch until a circuit admin set up the registries and
 * permissions (refusals over the /scabbard routes), the one-step setup command, and a
 * supply-chain walk written through the data API with `service_id` on alpha and read back
 * identically on beta and gamma. Hostile service ids: malformed 400, unknown 404, a
 * circuit this node is not a member of 404.
 */
import t from 'tap';
import { join } from 'node:path';
import { buildBatch, buildBatchList, type BuiltTxn } from '../src/ledger/build.js';
import type { Signer } from '../src/crypto/secp256k1.js';
import { intkeyAddress, intkeyPayload, INTKEY_PREFIX } from '../src/families/intkey.js';
import { createNamespaceRegistryTxn, executeContractTxn, namespacePermissionTxn } from '../src/scabbard/payloads.js';
import { startCircuitNodes, type CircuitNode } from './helpers/circuits.js';
import { startScabbardCircuit, type ScabbardCircuit } from './helpers/scabbard.js';
import { runToExit } from './helpers/child.js';
import { sabreSetup } from '../src/cli/sabre-setup.js';
import { Api, acmeWithSchemas, expectCommitted, gtin, newKey, w, type Res } from './helpers/data-api.js';

const { nodes, stop } = await startCircuitNodes(['alpha', 'beta', 'gamma']);
const [A, B, C] = nodes as [CircuitNode, CircuitNode, CircuitNode];
t.teardown(async () => {
  if (process.env.CIRCUIT_TEST_LOGS)
    for (const n of nodes) (await import('node:fs')).writeFileSync(`${process.env.CIRCUIT_TEST_LOGS}-${n.id}.log`, n.child.log());
  await stop();
});

const circuit: ScabbardCircuit = await startScabbardCircuit(nodes, 'datab-00001', { alpha: 'dA00', beta: 'dB00', gamma: 'dC00' }, [
  A.admin.publicKey,
]);
// A circuit alpha is not a member of.
const other: ScabbardCircuit = await startScabbardCircuit([B, C], 'datab-00002', { beta: 'oB00', gamma: 'oC00' }, [B.admin.publicKey]);

/** The data API of `n`, every call with `service_id` of n's service on `c`. */
class ServiceApi extends Api {
  constructor(
    n: CircuitNode,
    readonly serviceId: string,
  ) {
    super(n.child.dataUrl);
  }
  override call(method: string, path: string, body?: unknown, raw?: string): Promise<Res> {
    return super.call(method, `${path}${path.includes('?') ? '&' : '?'}service_id=${encodeURIComponent(this.serviceId)}`, body, raw);
  }
}
const apiOf = (n: CircuitNode): ServiceApi => new ServiceApi(n, circuit.serviceId(n));

async function post(n: CircuitNode, txns: BuiltTxn[], signer: Signer): Promise<string> {
  const batch = buildBatch(signer, txns);
  const res = await fetch(`${n.url}${circuit.base(n)}/batches`, {
    method: 'POST',
    headers: { authorization: `Bearer ${n.auth}`, 'content-type': 'application/octet-stream' },
    body: Buffer.from(buildBatchList([batch])),
  });
  if (res.status !== 202) throw new Error(`POST batches: ${res.status} ${await res.text()}`);
  return batch.id;
}

async function status(n: CircuitNode, id: string): Promise<{ statusType: string; message: Array<{ error_message: string }> }> {
  const r = await n.call('GET', `${circuit.base(n)}/batch_statuses?ids=${id}&wait=60`, { auth: n.auth });
  const [entry] = r.body as Array<{ status: { statusType: string; message: Array<{ error_message: string }> } }>;
  if (!entry) throw new Error(`no status for ${id}: ${r.text}`);
  return entry.status;
}

const intkeySet = (signer: Signer, name: string, value: number): BuiltTxn =>
  executeContractTxn(signer, 'intkey', '1.0', [intkeyAddress(name)], [intkeyAddress(name)], intkeyPayload('set', name, value));

t.test('hostile service ids', async (t) => {
  const a = new Api(A.child.dataUrl);
  for (const bad of ['datab-00001', 'datab-00001::', '::dA00', 'a::b::c', 'datab-00001:dA00']) {
    const r = await a.get(`/organization?service_id=${encodeURIComponent(bad)}`);
    t.equal(r.status, 400, `malformed: ${bad}`);
    t.match(r.json, { message: /fully-qualified service_id/ });
  }
  for (const unknown of ['nope0-00000::dA00', 'datab-00001::zz00', 'datab-00001::dB00']) {
    const r = await a.get(`/organization?service_id=${encodeURIComponent(unknown)}`);
    t.equal(r.status, 404, `unknown: ${unknown}`);
    t.same(r.json, { message: `Service ${unknown} not found` });
  }
  const notMember = other.serviceId(B);
  t.equal((await a.get(`/organization?service_id=${notMember}`)).status, 404, 'a circuit alpha is not a member of: reads');
  t.equal(
    (await a.post(`/organization?service_id=${notMember}`, { data: [{ id: 'x', name: 'X' }] })).status,
    404,
    'a circuit alpha is not a member of: writes',
  );
  t.equal((await a.get(`/batch_statuses?id=${'0'.repeat(128)}&service_id=${notMember}`)).status, 404, 'and batch statuses');
  const onB = await new Api(B.child.dataUrl).get(`/organization?service_id=${notMember}`);
  t.equal(onB.status, 200, 'the same service id on a member');
  t.equal(onB.json.paging.total, 0);
});

t.test('namespace rules: refusals until a circuit admin grants read and write', async (t) => {
  const ik = await post(A, [intkeySet(A.admin, 'k0', 1)], A.admin);
  const s0 = await status(B, ik);
  t.equal(s0.statusType, 'Invalid', 'intkey without a namespace registry');
  t.match(s0.message[0]?.error_message, `Namespace Registry does not exist: ${INTKEY_PREFIX}`);

  // Supply-chain contracts through the data API: the batch is INVALID, saying why.
  const org = await apiOf(A).post(w('/organization'), { data: [{ id: 'early', name: 'Too Early' }] });
  t.equal(org.status, 200);
  t.equal(org.json.status, 'INVALID', 'grid_pike without a namespace registry');
  t.match(org.json.invalid_transactions[0].message, /^Namespace Registry does not exist: 621dee$/);

  const intruder = await post(B, [createNamespaceRegistryTxn(B.admin, INTKEY_PREFIX, [B.admin.publicKey])], B.admin);
  const s1 = await status(C, intruder);
  t.equal(s1.statusType, 'Invalid', 'a non-admin creating a namespace registry');
  t.match(s1.message[0]?.error_message, /^Only admins can create a namespace registry: 0[23][0-9a-f]{64} is not in sawtooth\.swa\.administrators/);

  const writeOnly = await post(
    A,
    [createNamespaceRegistryTxn(A.admin, INTKEY_PREFIX, [A.admin.publicKey]), namespacePermissionTxn(A.admin, INTKEY_PREFIX, 'intkey', false, true)],
    A.admin,
  );
  t.equal((await status(A, writeOnly)).statusType, 'Committed', 'the admin creates the registry, write permission only');
  const s2 = await status(C, await post(A, [intkeySet(A.admin, 'k1', 1)], A.admin));
  t.equal(s2.statusType, 'Invalid', 'no read permission');
  t.match(s2.message[0]?.error_message, `Contract does not have permission to read from state : intkey ${intkeyAddress('k1')}`);

  const readOnly = await post(A, [namespacePermissionTxn(A.admin, INTKEY_PREFIX, 'intkey', true, false)], A.admin);
  t.equal((await status(A, readOnly)).statusType, 'Committed');
  const s3 = await status(B, await post(B, [intkeySet(A.admin, 'k2', 1)], A.admin));
  t.equal(s3.statusType, 'Invalid', 'no write permission');
  t.match(s3.message[0]?.error_message, `Contract does not have permission to write to state: intkey, ${intkeyAddress('k2')}`);
});

t.test('one-step setup by the circuit command, idempotent', async (t) => {
  const setup = (n: CircuitNode) =>
    sabreSetup({
      url: n.url,
      auth: `Bearer ${n.auth}`,
      signer: n.admin,
      circuitId: circuit.circuitId,
      serviceId: circuit.svc[n.id] ?? '',
      waitSeconds: 60,
    });
  const refused = await setup(B);
  t.equal(refused.ok, false, 'a key that is not a circuit admin');
  t.match(refused.message, /^setup batch [0-9a-f]{128} is Invalid: Only admins can create a contract registry/);

  // The command as an operator runs it, with alpha's admin key (a circuit admin).
  const first = await runToExit(
    [
      'src/cli/circuit.ts',
      'sabre-setup',
      '--url',
      A.url,
      '--key',
      join(A.dir, 'keys', 'admin.priv'),
      '--circuit-id',
      circuit.circuitId,
      '--service',
      'dA00',
    ],
    { ...process.env },
  );
  t.equal(first.code, 0, first.log);
  t.match(first.log, /^committed: contract registry grid_pike, /m);
  t.match(first.log, /namespace registry 621dee/);
  t.match(first.log, /read\/write permission of intkey in 1cf126/);
  t.notMatch(first.log, /namespace registry 1cf126/, 'the registry that exists is left alone');
  const again = await setup(C);
  t.same(
    again,
    { ok: true, message: 'nothing to do: every registry and permission is there', submitted: 0 },
    'run again (on another member): nothing submitted',
  );

  const ok = await post(C, [intkeySet(A.admin, 'k3', 7)], A.admin);
  for (const n of nodes) t.equal((await status(n, ok)).statusType, 'Committed', `intkey commits on ${n.id} after the setup`);
  const values = await Promise.all(nodes.map((n) => n.call('GET', `${circuit.base(n)}/state/${intkeyAddress('k3')}`, { auth: n.auth })));
  const [va, vb, vc] = values.map((v) => v.body);
  t.ok(Array.isArray(va), 'a value');
  t.same(vb, va);
  t.same(vc, va);
});

t.test('a supply-chain walk through the data API on alpha, read back on beta and gamma', async (t) => {
  const a = apiOf(A);
  await acmeWithSchemas(a);
  const clerk = newKey();
  const agent = await expectCommitted(
    a.post(w('/organization/acme/agent'), { data: [{ public_key: clerk.publicKey, roles: ['catalog'], metadata: [{ dept: 'catalog' }] }] }),
    'agent',
  );
  t.match(agent.json.link, { batch_id: /^[0-9a-f]{128}$/, event_id: /^[0-9a-f-]{36}$/ });
  const props = [{ name: 'GDSN_3_1', data_type: 'STRING', value: '<tradeItem/>' }];
  const products = await expectCommitted(
    a.post(w('/product'), {
      data: [
        { product_id: gtin(1), owner: 'acme', properties: [...props, { name: 'weight', data_type: 'NUMBER', value: 1250 }] },
        { product_id: gtin(2), owner: 'acme', properties: props },
      ],
    }),
    'products',
  );
  const lastBatch = products.json.link.batch_id as string;
  // Batch statuses on alpha by event id; on the others by batch id (events are the submitting node's).
  const byEvent = await a.get(`/batch_statuses?id=${products.json.link.event_id}`);
  t.match(byEvent.json.data, [{ batch_id: lastBatch, event_id: products.json.link.event_id, status: 'COMMITTED' }]);
  for (const n of [B, C]) {
    // A member that has not applied the round yet does not know the batch (UNKNOWN answers
    // at once, wait or not): ask again until it has, for a bounded time.
    let s = await apiOf(n).get(`/batch_statuses?id=${lastBatch}&wait=60`);
    for (let tries = 0; tries < 150 && s.json.data?.[0]?.status === 'UNKNOWN'; tries++) {
      await new Promise((r) => setTimeout(r, 200));
      s = await apiOf(n).get(`/batch_statuses?id=${lastBatch}&wait=60`);
    }
    t.same(s.json.data, [{ batch_id: lastBatch, status: 'COMMITTED', invalid_transactions: [] }], `committed on ${n.id}`);
  }

  const nodeKey = (await a.get('/organization/acme/agent')).json.data.find((x: any) => x.public_key !== clerk.publicKey).public_key as string;
  const paths = [
    '/organization',
    '/organization/acme',
    '/organization/acme/agent',
    `/organization/acme/agent/${clerk.publicKey}`,
    '/agent',
    `/agent/${nodeKey}`,
    '/role/acme',
    '/role/acme/catalog',
    '/schema',
    '/schema/gs1_product',
    '/product',
    `/product/${gtin(1)}`,
    `/product/${gtin(2)}`,
  ];
  for (const path of paths) {
    const [ra, rb, rc] = (await Promise.all(nodes.map((n) => apiOf(n).get(path)))) as [Res, Res, Res];
    t.equal(ra.status, 200, `${path} on alpha`);
    // The service id differs by member; everything else is the same bytes.
    const norm = (r: Res, n: CircuitNode): string =>
      JSON.stringify(r.json)
        .replaceAll(circuit.serviceId(n), '<service>')
        .replaceAll(encodeURIComponent(circuit.serviceId(n)), '<service>');
    t.equal(norm(rb, B), norm(ra, A), `${path}: beta as alpha`);
    t.equal(norm(rc, C), norm(ra, A), `${path}: gamma as alpha`);
    const records: any[] = Array.isArray(ra.json.data) ? ra.json.data : [ra.json];
    t.ok(records.length > 0, `${path}: records`);
    for (const [r, n] of [
      [ra, A],
      [rb, B],
      [rc, C],
    ] as Array<[Res, CircuitNode]>) {
      const recs: any[] = Array.isArray(r.json.data) ? r.json.data : [r.json];
      t.ok(
        recs.every((x) => x.service_id === circuit.serviceId(n)),
        `${path} on ${n.id}: each record carries service_id`,
      );
    }
  }
  t.match((await a.get(`/product/${gtin(1)}`)).json, { product_id: gtin(1), owner: 'acme', product_namespace: 'GS1' });
  t.equal((await a.get(`/organization/acme/agent/${clerk.publicKey}`)).json.roles[0].name, 'catalog');
  t.equal((await new Api(A.child.dataUrl).get('/organization')).json.paging.total, 0, "the node's own ledger has none of it");
});
