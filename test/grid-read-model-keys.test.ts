/**
 * Read-model keys are injective: no id, whatever characters it holds, makes its records
 * show up under another id's listing. The contracts refuse control characters in ids; this
 * checks the key encoding on its own, with state written directly (as older state or
 * another writer could hold it), projected into a real LMDB read model and listed through
 * the data API's prefixes.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { gridKeys, gridPrefixes, gridProjector, type ReadModelWriter } from '../src/ledger/read-model/index.js';
import { agentAddress, purchaseOrderAddress, roleAddress } from '../src/families/grid/addressing.js';
import { G, encodeMsg } from '../src/families/grid/common.js';
import { ReadModel } from '../src/ledger/read-model/reader.js';
import { openStore } from '../src/store/checksum.js';

const SEP = '\u0005';

t.test('composite keys cannot be forged with the separator', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-keys-'));
  const root = open({ path: dir, maxDbs: 32 });
  t.teardown(async () => {
    await root.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const writer: ReadModelWriter = {
    put: (db, key, value) => void openStore(root, db).putSync(key, value),
    remove: (db, key) => void openStore(root, db).removeSync(key),
    get: (db, key) => openStore(root, db).get(key),
  };
  const block = { blockNum: 1, blockId: 'b1', timestamp: 1 };
  const project = (address: string, bytes: Uint8Array): void => gridProjector.project(address, bytes, writer, block);

  // An outsider's organization "acme<SEP>x" with an agent and a role.
  const evilOrg = `acme${SEP}x`;
  project(agentAddress('k-acme'), encodeMsg(G.AgentList, { agents: [{ orgId: 'acme', publicKey: 'k-acme', active: true, roles: ['admin'] }] }));
  project(agentAddress('k-evil'), encodeMsg(G.AgentList, { agents: [{ orgId: evilOrg, publicKey: 'k-evil', active: true, roles: ['admin'] }] }));
  project(roleAddress('acme', 'admin'), encodeMsg(G.RoleList, { roles: [{ orgId: 'acme', name: 'admin' }] }));
  project(roleAddress(evilOrg, 'admin'), encodeMsg(G.RoleList, { roles: [{ orgId: evilOrg, name: 'admin' }] }));
  // Purchase orders "PO-X" and "PO-X<SEP>1", each with versions and revisions.
  const po = (uid: string, versionId: string, xml: string): Uint8Array =>
    encodeMsg(G.PurchaseOrderList, {
      purchaseOrders: [
        {
          uid,
          workflowState: 'issued',
          buyerOrgId: 'acme',
          sellerOrgId: 'beta',
          versions: [
            {
              versionId,
              workflowState: 'proposed',
              currentRevisionId: 1,
              revisions: [{ revisionId: 1, submitter: 'k', createdAt: 1, orderXmlV3_4: xml }],
            },
          ],
          createdAt: 1,
          workflowId: 'built-in::collaborative::v1',
        },
      ],
    });
  project(purchaseOrderAddress('PO-X'), po('PO-X', '1', '<mine/>'));
  // Version "x" of PO "PO-X<SEP>1" joined unescaped is "PO-X<SEP>1<SEP>x": a "version" of PO-X.
  project(purchaseOrderAddress(`PO-X${SEP}1`), po(`PO-X${SEP}1`, 'x', '<forged/>'));

  const rm = new ReadModel(root);
  const acmeAgents = rm.page('agent', gridPrefixes.agentsOf('acme'), 0, 100);
  t.same(
    acmeAgents.items.map((a) => a.public_key),
    ['k-acme'],
    'acme lists only its own agent',
  );
  t.equal(acmeAgents.total, 1);
  t.same(
    rm.page('role', gridPrefixes.rolesOf('acme'), 0, 100).items.map((r) => r.org_id),
    ['acme'],
    'and only its own role',
  );
  t.same(
    rm.page('agent', gridPrefixes.agentsOf(evilOrg), 0, 100).items.map((a) => a.public_key),
    ['k-evil'],
    'the other org keeps its agent',
  );

  const versions = rm.page('poVersion', gridPrefixes.versionsOf('PO-X'), 0, 100);
  t.same(
    versions.items.map((v) => v.version_id),
    ['1'],
    'PO-X has only its own version',
  );
  const revisions = rm.page('poRevision', gridPrefixes.revisionsOf('PO-X', '1'), 0, 100);
  t.same(
    revisions.items.map((r) => r.order_xml_v3_4),
    ['<mine/>'],
    'and only its own revisions',
  );
  t.same(
    rm.page('poRevision', gridPrefixes.revisionsOf(`PO-X${SEP}1`, 'x'), 0, 100).items.map((r) => r.order_xml_v3_4),
    ['<forged/>'],
  );
  t.equal(rm.all('poRevision').length, 2, 'two revisions in all, none overwritten');

  // Distinct parts give distinct keys, also for the escape character itself and for
  // split points that move ("a<SEP>" + "b" against "a" + "<SEP>b").
  const pairs: Array<[string, string]> = [
    ['a', 'b'],
    [`a${SEP}`, 'b'],
    ['a', `${SEP}b`],
    ['a\u0006', 'b'],
    ['a', '\u0006b'],
    ['a\u00065', 'b'],
    [`a\u0006${SEP}`, 'b'],
  ];
  const keys = new Set(pairs.map(([x, y]) => gridKeys.agent(x, y)));
  t.equal(keys.size, pairs.length, 'all keys differ');
  for (const [x, y] of pairs) {
    for (const [x2] of pairs) {
      if (x2 !== x) t.notOk(gridKeys.agent(x, y).startsWith(gridPrefixes.agentsOf(x2)), `${JSON.stringify(x)} not under ${JSON.stringify(x2)}`);
    }
  }
  t.equal(gridKeys.organization('acme'), 'acme', 'plain ids keep their plain key');
});
