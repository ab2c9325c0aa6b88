/**
 * No organization can act for another, over real HTTP. An outsider with a fresh key signs
 * its own batches (POST /batches on the data API): it creates an organization of its own,
 * then tries upstream Pike's takeover (a role written into the victim's organization, that
 * role or the victim's admin role given to itself, an admin agent created in the victim's
 * organization, a role of its own naming the victim). Every step is INVALID with the
 * contract's message and the victim's records stay as they were. The node's key, admin of
 * its own organization, cannot write roles of another one through the JSON API either;
 * a role that names another organization in `allowed_organizations` still works for it.
 */
import t, { type Test } from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import { Api, agentKey, clientBatch, expectCommitted, newKey, postProtobuf, w } from './helpers/data-api.js';
import type { GridActionInput } from '../src/families/grid/index.js';
import type { Signer } from '../src/crypto/secp256k1.js';

let node: TestNode;
let api: Api;
let NODE_KEY: string;
const EVIL = newKey();

t.before(async () => {
  node = await startTestNode();
  api = new Api(node.dataUrl);
  NODE_KEY = node.node.nodeSigner.publicKey;
  await expectCommitted(api.post(w('/organization'), { data: [{ id: 'acme', name: 'Acme Corp' }] }), 'acme');
  await expectCommitted(api.post(w('/role/acme'), { data: [{ name: 'catalog', permissions: ['product::can-create-product'] }] }), 'acme role');
});
t.teardown(() => node.stop());

/** One client-signed batch of one action; its status entry once it is settled. */
async function clientSubmit(t: Test, signer: Signer, action: GridActionInput): Promise<any> {
  const { id, body } = clientBatch(signer, [action]);
  const posted = await postProtobuf(node.dataUrl, body);
  t.equal(posted.status, 202, `POST /batches ${action.action}`);
  const s = await api.get(`/batch_statuses?id=${id}&wait=10`);
  return s.json.data[0];
}

async function acmeSnapshot(): Promise<unknown> {
  const strip = (r: { json: { data: unknown[] } }): unknown => r.json.data;
  return {
    org: (await api.get('/organization/acme')).json,
    roles: strip(await api.get('/role/acme')),
    agents: strip(await api.get('/organization/acme/agent')),
  };
}

t.test('the takeover sequence with client-signed batches is refused step by step', async (t) => {
  const own = await clientSubmit(t, EVIL, { action: 'create_organization', org_id: 'evil', name: 'Evil' });
  t.equal(own.status, 'COMMITTED', 'an outsider may create an organization of its own');
  const before = await acmeSnapshot();
  const denied = (perm: string): string => `The signer "${EVIL.publicKey}" does not have the "${perm}" permission for org "acme"`;
  const steps: Array<[GridActionInput, string]> = [
    [{ action: 'create_role', org_id: 'acme', name: 'owner', permissions: ['pike::can-create-agents'] }, denied('pike::can-create-roles')],
    [{ action: 'update_role', org_id: 'acme', name: 'catalog', permissions: ['pike::can-create-agents'] }, denied('pike::can-update-roles')],
    [
      { action: 'update_agent', org_id: 'evil', public_key: EVIL.publicKey, roles: ['admin', 'acme.owner'], active: true },
      'Role acme.owner does not exist or does not list organization evil in its allowed organizations',
    ],
    [
      { action: 'update_agent', org_id: 'evil', public_key: EVIL.publicKey, roles: ['admin', 'acme.admin'], active: true },
      'Role acme.admin does not exist or does not list organization evil in its allowed organizations',
    ],
    [{ action: 'create_agent', org_id: 'acme', public_key: newKey().publicKey, roles: ['admin'], active: true }, denied('pike::can-create-agents')],
    [{ action: 'update_agent', org_id: 'acme', public_key: NODE_KEY, roles: ['admin'], active: false }, denied('pike::can-update-agents')],
    [{ action: 'update_organization', org_id: 'acme', name: 'Taken' }, denied('pike::can-update-organization')],
  ];
  for (const [action, message] of steps) {
    const s = await clientSubmit(t, EVIL, action);
    t.equal(s.status, 'INVALID', `${action.action} is INVALID`);
    t.equal(s.invalid_transactions[0]?.message, message);
  }
  // A role of its own naming acme as an allowed organization gives nothing in acme.
  t.equal(
    (
      await clientSubmit(t, EVIL, {
        action: 'create_role',
        org_id: 'evil',
        name: 'reach',
        permissions: ['pike::can-create-agents'],
        allowed_organizations: ['acme'],
      })
    ).status,
    'COMMITTED',
  );
  t.equal(
    (await clientSubmit(t, EVIL, { action: 'update_agent', org_id: 'evil', public_key: EVIL.publicKey, roles: ['admin', 'reach'], active: true }))
      .status,
    'COMMITTED',
  );
  const last = await clientSubmit(t, EVIL, {
    action: 'create_agent',
    org_id: 'acme',
    public_key: newKey().publicKey,
    roles: ['admin'],
    active: true,
  });
  t.equal(last.status, 'INVALID');
  t.equal(last.invalid_transactions[0]?.message, denied('pike::can-create-agents'));
  t.same(await acmeSnapshot(), before, "acme's organization, roles and agents are unchanged");
});

t.test('the node key cannot write roles of an organization it is no agent of (data API)', async (t) => {
  const beta = newKey();
  t.equal((await clientSubmit(t, beta, { action: 'create_organization', org_id: 'beta', name: 'Beta' })).status, 'COMMITTED');
  const msg = `The signer "${NODE_KEY}" does not have the "pike::can-create-roles" permission for org "beta"`;
  const r = await api.post(w('/role/beta'), { data: [{ name: 'intruder', permissions: ['pike::can-create-agents'] }] });
  t.equal(r.status, 200);
  t.equal(r.json.status, 'INVALID');
  t.equal(r.json.invalid_transactions[0].message, msg);
  const u = await api.put(w('/role/beta/intruder'), { permissions: ['pike::can-create-agents'] });
  t.equal(u.json.status, 'INVALID');
  t.equal(u.json.invalid_transactions[0].message, `The signer "${NODE_KEY}" does not have the "pike::can-update-roles" permission for org "beta"`);
  t.same(
    (await api.get('/role/beta')).json.data.map((x: { name: string }) => x.name),
    ['admin'],
    "beta's roles unchanged",
  );
});

t.test('a role that lists another organization in allowed_organizations works for it', async (t) => {
  const gammaAdmin = agentKey(node.dataDir, 'gamma-admin');
  await expectCommitted(api.post(w('/organization', gammaAdmin), { data: [{ id: 'gamma', name: 'Gamma' }] }), 'gamma');
  // Acme consents: its role "onboarding" may be held by gamma's agents.
  await expectCommitted(
    api.post(w('/role/acme'), { data: [{ name: 'onboarding', permissions: ['pike::can-create-agents'], allowed_organizations: ['gamma'] }] }),
    'acme role for gamma',
  );
  // Without consent the data API refuses the name before anything is submitted.
  const refused = await api.put(w(`/organization/gamma/agent/${gammaAdmin.publicKey}`, gammaAdmin), { roles: ['admin', 'acme.catalog'] });
  t.equal(refused.status, 400);
  t.match(refused.json.message, /role acme\.catalog of organization acme does not list gamma in its allowed_organizations/);
  await expectCommitted(
    api.put(w(`/organization/gamma/agent/${gammaAdmin.publicKey}`, gammaAdmin), { roles: ['admin', 'acme.onboarding'] }),
    'gamma admin holds acme.onboarding',
  );
  const helper = newKey().publicKey;
  await expectCommitted(
    api.post(w('/organization/acme/agent', gammaAdmin), { data: [{ public_key: helper }] }),
    'gamma admin onboards an acme agent',
  );
  t.equal((await api.get(`/organization/acme/agent/${helper}`)).status, 200);
  // It does not make gamma a role writer of acme.
  const r = await api.post(w('/role/acme', gammaAdmin), { data: [{ name: 'gamma-made' }] });
  t.equal(r.json.status, 'INVALID');
  t.equal(
    r.json.invalid_transactions[0].message,
    `The signer "${gammaAdmin.publicKey}" does not have the "pike::can-create-roles" permission for org "acme"`,
  );
});
