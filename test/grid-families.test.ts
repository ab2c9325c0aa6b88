/**
 * The supply-chain families run against an in-memory ledger that behaves like the engine:
 * every transaction sees a context limited to its header's inputs/outputs, a thrown
 * InvalidTransaction discards its writes, and committed changes are fed to the projector.
 */
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { InvalidTransaction, type Family, type TxnContext } from '../src/families/types.js';
import {
  GRID_ACTIONS,
  GridBuildError,
  buildGridTransaction,
  createSabreFamily,
  gridFamilies,
  wrapInSabre,
  GRID_CONTRACTS,
  type BuiltTransaction,
  type GridActionInput,
} from '../src/families/grid/index.js';
import {
  agentAddress,
  alternateIdAddress,
  locationAddress,
  organizationAddress,
  productAddress,
  purchaseOrderAddress,
  roleAddress,
  schemaAddress,
  purchaseOrderAlternateIdAddress,
  sabreContractAddress,
} from '../src/families/grid/addressing.js';
import { G, compareUtf8, encodeMsg } from '../src/families/grid/common.js';
import type { MessageType } from '../src/proto/index.js';
import { gs1CheckDigit, gtinError, isValidGln } from '../src/families/grid/gs1.js';
import { alternateIds, dataTypeValue, metadataEntries, propertyValue } from '../src/families/grid/build.js';
import {
  GRID_DB,
  KEY_SEP,
  agentRoleKey,
  gridKeys,
  gridProjector,
  gridRecords,
  safeKey,
  type BlockInfo,
  type ReadModelWriter,
} from '../src/ledger/read-model/index.js';
import { decodeExecuteContract } from '../src/families/grid/sabre.js';

// ------------------------------------------------------------------ harness

const TS = 1_700_000_000;
const key = (name: string): string => `02${createHash('sha256').update(name).digest('hex')}`;
const withCheck = (body: string): string => body + String(gs1CheckDigit(body));

class MemoryLedger {
  state = new Map<string, Uint8Array>();
  changed = new Set<string>();
  events: string[] = [];
  families = new Map<string, Family>();

  constructor(families: Family[]) {
    for (const f of families) this.families.set(f.name, f);
  }

  /** Runs one transaction; returns undefined on success or the InvalidTransaction message. */
  submit(tx: BuiltTransaction, signer: string): string | undefined {
    const family = this.families.get(tx.familyName);
    if (family === undefined || !family.versions.includes(tx.familyVersion)) {
      return `no family ${tx.familyName} ${tx.familyVersion}`;
    }
    const writes = new Map<string, Uint8Array | null>();
    const covered = (list: string[], a: string): boolean => list.some((p) => a.startsWith(p));
    const ctx: TxnContext = {
      get: (a) => {
        if (!covered(tx.inputs, a)) throw new InvalidTransaction(`address not in inputs: ${a}`);
        if (writes.has(a)) return writes.get(a) ?? undefined;
        return this.state.get(a);
      },
      set: (a, v) => {
        if (!covered(tx.outputs, a)) throw new InvalidTransaction(`address not in outputs: ${a}`);
        if (!/^[0-9a-f]{70}$/.test(a)) throw new Error(`bad address ${a}`);
        writes.set(a, v);
      },
      delete: (a) => {
        if (!covered(tx.outputs, a)) throw new InvalidTransaction(`address not in outputs: ${a}`);
        writes.set(a, null);
      },
      addEvent: (type) => {
        this.events.push(type);
      },
      addReceiptData: () => {},
    };
    try {
      family.apply(
        {
          id: 'txn',
          header: {
            batcherPublicKey: signer,
            dependencies: [],
            familyName: tx.familyName,
            familyVersion: tx.familyVersion,
            inputs: tx.inputs,
            nonce: '',
            outputs: tx.outputs,
            payloadSha512: '',
            signerPublicKey: signer,
          },
          payload: tx.payload,
        },
        ctx,
      );
    } catch (err) {
      if (err instanceof InvalidTransaction) return err.message;
      throw err;
    }
    for (const [a, v] of writes) {
      if (v === null) this.state.delete(a);
      else this.state.set(a, v);
      this.changed.add(a);
    }
    return undefined;
  }

  /** Feeds the changed addresses to the projector, as a committed block would. */
  project(rm: ReadModelWriter, block: BlockInfo): void {
    for (const a of [...this.changed].sort()) {
      if (gridProjector.namespaces.some((ns) => a.startsWith(ns))) gridProjector.project(a, this.state.get(a), rm, block);
    }
    this.changed.clear();
  }
}

class MemoryReadModel implements ReadModelWriter {
  dbs = new Map<string, Map<string, unknown>>();
  puts = 0;
  put(db: string, k: string, v: unknown): void {
    this.puts++;
    if (!this.dbs.has(db)) this.dbs.set(db, new Map());
    this.dbs.get(db)?.set(k, structuredClone(v));
  }
  remove(db: string, k: string): void {
    this.dbs.get(db)?.delete(k);
  }
  get(db: string, k: string): unknown {
    return this.dbs.get(db)?.get(k);
  }
  keys(db: string): string[] {
    return [...(this.dbs.get(db)?.keys() ?? [])].sort();
  }
}

type Mode = 'plain' | 'sabre';

function tx(action: GridActionInput, mode: Mode = 'plain', signer?: string): BuiltTransaction {
  const built = buildGridTransaction(action, { timestamp: TS, signer });
  return mode === 'sabre' ? wrapInSabre(built) : built;
}

// ------------------------------------------------------------------ fixtures

const ADMIN_A = key('acme-admin');
const ADMIN_B = key('beta-admin');
const CLERK_A = key('acme-clerk'); // product/location role
const NOBODY_A = key('acme-nobody'); // agent with no roles
const BUYER_A = key('acme-buyer'); // po::partner
const SELLER_B = key('beta-seller'); // po::partner via role in beta

const PREFIX_A = '0614141';
const GTIN14 = withCheck('0061414100001');
const GTIN13 = withCheck('061414100002');
const GLN = withCheck('061414100010');
const XML = (n: number): string => `<order n="${n}"/>`;

const PRODUCT_PROPS = [{ name: 'GDSN_3_1', data_type: 'STRING', value: '<tradeItem/>' }];
const LOCATION_PROPS = [
  { name: 'locationDescription', data_type: 'String', value: 'Main warehouse' },
  { name: 'locationType', data_type: 'ENUM', value: 2 },
  { name: 'addressLine1', data_type: 'string', value: '1 Main St' },
  { name: 'latLong', data_type: 'LatLong', value: { latitude: 44_977_753, longitude: -93_265_015 } },
  { name: 'open', data_type: 'boolean', value: true },
  { name: 'docks', data_type: 'NUMBER', value: 12 },
  { name: 'photo', data_type: 'BYTES', value: Buffer.from('jpg').toString('base64') },
  { name: 'contact', data_type: 'STRUCT', value: [{ name: 'person', data_type: 'STRING', value: 'Ann' }] },
];

/** Two organizations with agents and roles, the two GS1 schemas. */
function setupSteps(): Array<[string, GridActionInput]> {
  return [
    [
      ADMIN_A,
      {
        action: 'create_organization',
        org_id: 'acme',
        name: 'Acme Corp',
        alternate_ids: [`gs1_company_prefix:${PREFIX_A}`],
        metadata: [{ country: 'US' }, { key: 'tier', value: 'gold' }],
      },
    ],
    [
      ADMIN_B,
      {
        action: 'create_organization',
        id: 'beta',
        name: 'Beta Ltd',
        alternate_ids: [{ id_type: 'gs1_company_prefix', id: '0012345' }],
      },
    ],
    [
      ADMIN_A,
      {
        action: 'create_role',
        org_id: 'acme',
        name: 'catalog',
        description: 'Product and location data',
        permissions: [
          'product::can-create-product',
          'product::can-update-product',
          'product::can-delete-product',
          'location::can-create-location',
          'location::can-update-location',
          'location::can-delete-location',
          'schema::can-create-schema',
          'schema::can-update-schema',
        ],
      },
    ],
    [ADMIN_A, { action: 'create_role', org_id: 'acme', name: 'po_partner', permissions: ['po::partner'] }],
    [ADMIN_B, { action: 'create_role', org_id: 'beta', name: 'po_partner', permissions: ['po::partner'] }],
    [ADMIN_A, { action: 'create_agent', org_id: 'acme', public_key: CLERK_A, roles: ['catalog'], metadata: { email: 'c@acme' } }],
    [ADMIN_A, { action: 'create_agent', org_id: 'acme', public_key: NOBODY_A }],
    [ADMIN_A, { action: 'create_agent', org_id: 'acme', public_key: BUYER_A, roles: ['po_partner'] }],
    [ADMIN_B, { action: 'create_agent', org_id: 'beta', public_key: SELLER_B, roles: ['po_partner'] }],
    [
      CLERK_A,
      {
        action: 'create_schema',
        name: 'gs1_product',
        owner: 'acme',
        description: 'GS1 product',
        properties: [{ name: 'GDSN_3_1', data_type: 'STRING', required: true, description: 'trade item XML' }],
      },
    ],
    [
      CLERK_A,
      {
        action: 'create_schema',
        schema_name: 'gs1_location',
        owner: 'acme',
        properties: [
          { name: 'locationDescription', data_type: 'STRING', required: true },
          { name: 'locationType', data_type: 'ENUM', required: true, enum_options: ['ShipTo', 'BillTo', 'ShipFrom'] },
          { name: 'addressLine1', data_type: 'STRING', required: true },
          { name: 'latLong', data_type: 'LAT_LONG' },
          { name: 'open', data_type: 'BOOLEAN' },
          { name: 'docks', data_type: 'NUMBER', number_exponent: 0 },
          { name: 'photo', data_type: 'BYTES' },
          { name: 'contact', data_type: 'STRUCT', struct_properties: [{ name: 'person', data_type: 'STRING' }] },
        ],
      },
    ],
  ];
}

/** A product and a location, then the collaborative purchase order to confirmed and closed. */
function flowSteps(): Array<[string, GridActionInput]> {
  const rev = (n: number, who: string): Record<string, unknown> => ({
    revision_number: n,
    submitter: who,
    created_at: TS + n,
    order_xml_v3_4: XML(n),
  });
  return [
    [CLERK_A, { action: 'create_product', product_id: GTIN14, owner: 'acme', properties: PRODUCT_PROPS }],
    [CLERK_A, { action: 'create_location', location_id: GLN, owner: 'acme', properties: LOCATION_PROPS }],
    [
      BUYER_A,
      {
        action: 'create_po',
        uid: 'PO-00001',
        buyer_org_id: 'acme',
        seller_org_id: 'beta',
        workflow_state: 'issued',
        workflow_id: 'built-in::collaborative::v1',
        created_at: TS,
        alternate_ids: ['po_number:4500001'],
        create_version_payload: { version_id: 'v1', workflow_state: 'proposed', revision: rev(1, BUYER_A) },
      },
    ],
    // Same state, new document: revision 2.
    [SELLER_B, { action: 'update_version', po_uid: 'PO-00001', version_id: 'v1', workflow_state: 'proposed', revision: rev(2, SELLER_B) }],
    // Move to modified with another document: revision 3.
    [SELLER_B, { action: 'update_version', po_uid: 'PO-00001', version_id: 'v1', workflow_state: 'modified', revision: rev(7, SELLER_B) }],
    // Confirm the order and accept the version; the latest revision is re-sent, so none is added.
    [
      BUYER_A,
      {
        action: 'update_po',
        po_uid: 'PO-00001',
        workflow_state: 'confirmed',
        accepted_version_number: 'v1',
        alternate_ids: ['po_number:4500001'],
        version_updates: [{ version_id: 'v1', workflow_state: 'accepted', revision: { ...rev(7, SELLER_B), revision_number: 3 } }],
      },
    ],
  ];
}

function closeStep(): [string, GridActionInput] {
  return [
    SELLER_B,
    {
      action: 'update_po',
      po_uid: 'PO-00001',
      workflow_state: 'closed',
      is_closed: true,
      version_updates: [
        {
          version_id: 'v1',
          workflow_state: 'obsolete',
          revision: { revision_number: 3, submitter: SELLER_B, created_at: TS + 7, order_xml_v3_4: XML(7) },
        },
      ],
    },
  ];
}

function runAll(t: Test, ledger: MemoryLedger, steps: Array<[string, GridActionInput]>, mode: Mode = 'plain'): void {
  for (const [signer, action] of steps) {
    const err = ledger.submit(tx(action, mode), signer);
    t.equal(err, undefined, `${mode} ${action.action} ${String(action.name ?? action.org_id ?? action.uid ?? action.po_uid ?? '')}`);
  }
}

function decodePo(ledger: MemoryLedger, uid: string): Record<string, unknown> {
  const bytes = ledger.state.get(purchaseOrderAddress(uid));
  if (bytes === undefined) throw new Error('no PO');
  const list = G.PurchaseOrderList.toObject(G.PurchaseOrderList.decode(bytes), { longs: Number, defaults: true });
  return (list.purchaseOrders as Array<Record<string, unknown>>)[0] as Record<string, unknown>;
}

function decodeAt(ledger: MemoryLedger, type: MessageType<unknown>, address: string): Record<string, unknown> {
  const bytes = ledger.state.get(address);
  if (bytes === undefined) throw new Error(`nothing at ${address}`);
  return type.toObject(type.decode(bytes), { longs: Number, defaults: true });
}

function freshLedger(t: Test): MemoryLedger {
  const ledger = new MemoryLedger(gridFamilies);
  runAll(t, ledger, setupSteps());
  return ledger;
}

// ------------------------------------------------------------------ tests

t.test('families, addressing and GS1 check digits', async (t) => {
  t.same(
    gridFamilies.map((f) => [f.name, f.versions, f.namespaces]),
    [
      ['grid_pike', ['1', '2'], ['621dee']],
      ['grid_schema', ['1', '2'], ['621dee']],
      ['grid_product', ['1', '2'], ['621dee']],
      ['grid_location', ['1', '2'], ['621dee']],
      ['grid_purchase_order', ['1', '2'], ['621dee']],
      ['sabre', ['0.5', '0.6', '1'], ['00ec00', '00ec01', '00ec02', '00ec03', '621dee']],
    ],
  );
  t.equal(
    productAddress('00614141000012'),
    '621dee0201000000000000000000000000000000000000000000000061414100001200',
    'product address as upstream computes it',
  );
  t.equal(productAddress('614141000012'), productAddress('00614141000012'), 'GTIN-12 pads to the same address');
  for (const a of [
    productAddress(GTIN13),
    locationAddress(GLN),
    agentAddress(ADMIN_A),
    organizationAddress('acme'),
    roleAddress('acme', 'admin'),
    alternateIdAddress('gs1_company_prefix', PREFIX_A),
    schemaAddress('gs1_product'),
    purchaseOrderAddress('PO-1'),
    purchaseOrderAlternateIdAddress('PO-1', 'po_number', '1'),
  ]) {
    t.match(a, /^621dee[0-9a-f]{64}$/, `70-hex grid address ${a}`);
  }
  const sha = (s: string): string => createHash('sha512').update(s).digest('hex');
  t.equal(organizationAddress('acme'), `621dee0501${sha('acme').slice(0, 60)}`);
  t.equal(roleAddress('acme', 'admin'), `621dee0502${sha('acme.admin').slice(0, 60)}`);
  t.equal(schemaAddress('gs1_product'), `621dee01${sha('gs1_product').slice(0, 62)}`);
  t.equal(sabreContractAddress('grid_pike', '2'), `00ec02${sha('grid_pike,2').slice(0, 64)}`);

  t.ok(compareUtf8('\uffff', '\u{10000}') < 0, 'lists sort by UTF-8 bytes, not UTF-16 units');
  t.ok(compareUtf8('b', 'a') > 0);
  t.equal(compareUtf8('a', 'a'), 0);
  t.equal(gtinError('00614141000012'), undefined, 'valid GTIN-14');
  t.equal(gtinError('614141000012'), undefined, 'valid GTIN-12');
  t.equal(gtinError('00614141000013'), 'Invalid gtin, check digit validation failed: 00614141000013');
  t.equal(gtinError('96385074'), 'Invalid GTIN, GTIN-8 is not supported at this time: 96385074');
  t.equal(gtinError(GTIN13), undefined, 'valid GTIN-13');
  t.equal(gtinError('12345'), 'Invalid length for GTIN identifier: 12345');
  t.equal(gtinError('1e5'), 'Invalid format, GTIN identifiers only contain numbers: 1e5');
  t.ok(isValidGln(GLN), 'GLN with its check digit');
  t.ok(isValidGln('5412345000013'), 'published GS1 example GLN');
  t.notOk(isValidGln('5412345000014'), 'wrong GLN check digit');
  t.notOk(isValidGln('541234500001'), 'GLN of 12 digits');
  t.notOk(isValidGln('54123450000a3'), 'GLN with a letter');
});

t.test('Pike: organizations, agents, roles and the admin role', async (t) => {
  const ledger = freshLedger(t);
  const org = decodeAt(ledger, G.OrganizationList, organizationAddress('acme'));
  t.same(org.organizations, [
    {
      orgId: 'acme',
      name: 'Acme Corp',
      locations: [],
      alternateIds: [{ idType: 'gs1_company_prefix', id: PREFIX_A }],
      metadata: [
        { key: 'country', value: 'US' },
        { key: 'tier', value: 'gold' },
      ],
    },
  ]);
  const admin = decodeAt(ledger, G.RoleList, roleAddress('acme', 'admin'));
  t.same(admin.roles, [
    {
      orgId: 'acme',
      name: 'admin',
      description: 'The Pike administrator',
      active: true,
      permissions: [
        'pike::can-create-agents',
        'pike::can-update-agents',
        'pike::can-delete-agents',
        'pike::can-update-organization',
        'pike::can-create-roles',
        'pike::can-update-roles',
        'pike::can-delete-roles',
      ],
      allowedOrganizations: [],
      inheritFrom: [],
    },
  ]);
  t.same(decodeAt(ledger, G.AgentList, agentAddress(ADMIN_A)).agents, [
    { orgId: 'acme', publicKey: ADMIN_A, active: true, roles: ['admin'], metadata: [] },
  ]);
  t.same(decodeAt(ledger, G.AlternateIdIndexEntryList, alternateIdAddress('gs1_company_prefix', PREFIX_A)).entries, [
    { idType: 'gs1_company_prefix', id: PREFIX_A, gridIdentityId: 'acme' },
  ]);

  const fails: Array<[string, GridActionInput, string | RegExp]> = [
    [key('x'), { action: 'create_organization', org_id: 'acme', name: 'Again' }, 'Organization already exists: acme'],
    [ADMIN_A, { action: 'create_organization', org_id: 'acme2', name: 'Two' }, `Agent already exists: ${ADMIN_A}`],
    [
      key('y'),
      { action: 'create_organization', org_id: 'gamma', name: 'Gamma', alternate_ids: [`gs1_company_prefix:${PREFIX_A}`] },
      `Alternate ID index entry already exists: gs1_company_prefix:${PREFIX_A}`,
    ],
    [
      NOBODY_A,
      { action: 'create_agent', org_id: 'acme', public_key: key('z') },
      `The signer "${NOBODY_A}" does not have the "pike::can-create-agents" permission for org "acme"`,
    ],
    [
      ADMIN_B,
      { action: 'create_agent', org_id: 'acme', public_key: key('z') },
      `The signer "${ADMIN_B}" does not have the "pike::can-create-agents" permission for org "acme"`,
    ],
    [
      key('stranger'),
      { action: 'create_agent', org_id: 'acme', public_key: key('z') },
      `Permission check failed: The signer is not an Agent: ${key('stranger')}`,
    ],
    [ADMIN_A, { action: 'create_agent', org_id: 'acme', public_key: CLERK_A }, `Agent already exists: ${CLERK_A}`],
    [
      ADMIN_A,
      { action: 'update_agent', org_id: 'acme', public_key: ADMIN_A, roles: ['catalog'] },
      /^An admin cannot remove themselves as admin\. 'admin' role must be included\n +in the roles list\.$/,
    ],
    [ADMIN_A, { action: 'update_agent', org_id: 'acme', public_key: ADMIN_A, active: false }, `Admin may not deactivate themselves: ${ADMIN_A}`],
    [ADMIN_A, { action: 'update_agent', org_id: 'acme', public_key: key('ghost') }, `Agent does not exist: ${key('ghost')}`],
    [
      ADMIN_A,
      { action: 'create_role', org_id: 'acme', name: 'admin' },
      "Role name 'admin' is reserved for the Pike administrator and cannot be overwritten",
    ],
    [
      ADMIN_A,
      { action: 'create_role', org_id: 'acme', name: 'a.b' },
      /^Role name is not properly formatted\. Roles may not contain the '\.' character/,
    ],
    [ADMIN_A, { action: 'delete_role', org_id: 'acme', name: 'a.b' }, /^Role name is not properly formatted/],
    [ADMIN_A, { action: 'create_role', org_id: 'acme', name: 'catalog' }, 'Role already exists: catalog'],
    [ADMIN_A, { action: 'delete_role', org_id: 'acme', name: 'nope' }, 'Role does not exist: nope'],
    [key('ghost'), { action: 'create_role', org_id: 'acme', name: 'r' }, `The signer is not an Agent: ${key('ghost')}`],
    [
      CLERK_A,
      { action: 'create_role', org_id: 'acme', name: 'r' },
      `The signer "${CLERK_A}" does not have the "pike::can-create-roles" permission for org "acme"`,
    ],
    [
      CLERK_A,
      { action: 'update_organization', org_id: 'acme', name: 'Mine' },
      `The signer "${CLERK_A}" does not have the "pike::can-update-organization" permission for org "acme"`,
    ],
    [
      ADMIN_A,
      { action: 'update_organization', org_id: 'acme', alternate_ids: ['gs1_company_prefix:0012345'] },
      'Alternate ID index entry already exists: gs1_company_prefix:0012345',
    ],
  ];
  for (const [signer, action, message] of fails) {
    const err = ledger.submit(tx(action), signer);
    if (typeof message === 'string') t.equal(err, message, `${action.action} refused: ${message}`);
    else t.match(err, message, `${action.action} refused`);
  }

  // The admin can update an organization; empty fields keep their values.
  t.equal(ledger.submit(tx({ action: 'update_organization', org_id: 'acme', locations: [GLN] }), ADMIN_A), undefined);
  const updated = decodeAt(ledger, G.OrganizationList, organizationAddress('acme')).organizations as Array<Record<string, unknown>>;
  t.same(updated[0]?.locations, [GLN]);
  t.equal(updated[0]?.name, 'Acme Corp');

  // Non-admin with can-update-agents cannot take roles away without keeping admin.
  t.equal(ledger.submit(tx({ action: 'update_role', org_id: 'acme', name: 'hr', permissions: ['pike::can-update-agents'] }), ADMIN_A), undefined);
  t.equal(ledger.submit(tx({ action: 'update_agent', org_id: 'acme', public_key: NOBODY_A, roles: ['hr'] }), ADMIN_A), undefined);
  t.equal(
    ledger.submit(tx({ action: 'update_agent', org_id: 'acme', public_key: CLERK_A, roles: ['catalog', 'hr'] }), NOBODY_A),
    "Only agents with the 'admin' permission can remove other admins",
  );
  // An inactive agent holds no permissions.
  t.equal(ledger.submit(tx({ action: 'update_agent', org_id: 'acme', public_key: NOBODY_A, active: false }), ADMIN_A), undefined);
  t.equal(
    ledger.submit(tx({ action: 'create_agent', org_id: 'acme', public_key: key('q') }), NOBODY_A),
    `The signer "${NOBODY_A}" does not have the "pike::can-create-agents" permission for org "acme"`,
  );
  // Deleting a role removes its state entry.
  t.equal(ledger.submit(tx({ action: 'delete_role', org_id: 'acme', name: 'hr' }), ADMIN_A), undefined);
  t.notOk(ledger.state.has(roleAddress('acme', 'hr')), 'role entry deleted');
  // Required fields, and unsupported Pike actions.
  const rawPike = (p: object): BuiltTransaction => ({
    familyName: 'grid_pike',
    familyVersion: '2',
    inputs: ['621dee05'],
    outputs: ['621dee05'],
    payload: encodeMsg(G.PikePayload, p),
  });
  t.equal(ledger.submit(rawPike({ action: 3, createOrganization: { id: 'x' } }), key('x')), 'organization name required');
  t.equal(ledger.submit(rawPike({ action: 3 }), key('x')), 'Unique organization ID required');
  t.equal(ledger.submit(rawPike({ action: 4 }), key('x')), 'Unique organization ID required');
  t.equal(ledger.submit(rawPike({ action: 1, createAgent: { orgId: 'acme' } }), ADMIN_A), 'Public key required');
  t.equal(ledger.submit(rawPike({ action: 2, updateAgent: { publicKey: 'k' } }), ADMIN_A), 'Organization ID required');
  t.equal(ledger.submit(rawPike({ action: 5, createRole: { name: 'r' } }), ADMIN_A), 'Organization ID required');
  t.equal(ledger.submit(rawPike({ action: 6, updateRole: { orgId: 'acme' } }), ADMIN_A), 'Name required');
  t.equal(
    ledger.submit(rawPike({ action: 4, updateOrganization: { id: 'nope' } }), ADMIN_A),
    `The signer "${ADMIN_A}" does not have the "pike::can-update-organization" permission for org "nope"`,
  );
  const delAgent = {
    familyName: 'grid_pike',
    familyVersion: '2',
    inputs: ['621dee05'],
    outputs: ['621dee05'],
    payload: encodeMsg(G.PikePayload, { action: 8 }),
  };
  t.equal(ledger.submit(delAgent, ADMIN_A), 'Invalid action');
});

t.test('Pike: external roles, allowed organizations and inheritance', async (t) => {
  const ledger = freshLedger(t);
  // Beta grants its "supplier" role to acme agents; acme's agent uses it as "beta.supplier".
  runAll(t, ledger, [
    [ADMIN_B, { action: 'create_role', org_id: 'beta', name: 'base', permissions: ['pike::can-create-agents'], allowed_organizations: ['acme'] }],
    [ADMIN_B, { action: 'create_role', org_id: 'beta', name: 'supplier', inherit_from: ['base'], allowed_organizations: ['acme'] }],
    [ADMIN_A, { action: 'update_agent', org_id: 'acme', public_key: NOBODY_A, roles: ['beta.base'] }],
  ]);
  t.equal(
    ledger.submit(tx({ action: 'create_agent', org_id: 'beta', public_key: key('n1') }), NOBODY_A),
    undefined,
    'external role grants beta permission',
  );
  // allowed_organizations names who may hold beta's role; it never makes beta's role act
  // for acme (upstream's reading, which let any organization act for any other).
  t.equal(
    ledger.submit(tx({ action: 'create_agent', org_id: 'acme', public_key: key('n2') }), NOBODY_A),
    `The signer "${NOBODY_A}" does not have the "pike::can-create-agents" permission for org "acme"`,
    'a role of beta does not act for acme',
  );
  // Inheritance: acme role "lead" inherits beta.base, which lists acme as allowed.
  runAll(t, ledger, [
    [ADMIN_A, { action: 'create_role', org_id: 'acme', name: 'lead', inherit_from: ['beta.base'] }],
    [ADMIN_A, { action: 'update_agent', org_id: 'acme', public_key: CLERK_A, roles: ['catalog', 'lead', 'admin'] }],
  ]);
  t.equal(ledger.submit(tx({ action: 'create_agent', org_id: 'acme', public_key: key('n3') }), CLERK_A), undefined, 'inherited permission');
  // A role inheriting from a role that does not allow the agent's org grants nothing.
  runAll(t, ledger, [
    [ADMIN_B, { action: 'create_role', org_id: 'beta', name: 'closed', permissions: ['pike::can-create-agents'] }],
    [ADMIN_A, { action: 'create_role', org_id: 'acme', name: 'wannabe', inherit_from: ['beta.closed'] }],
    [ADMIN_A, { action: 'create_agent', org_id: 'acme', public_key: key('w'), roles: ['wannabe'] }],
  ]);
  t.equal(
    ledger.submit(tx({ action: 'create_agent', org_id: 'acme', public_key: key('n4') }), key('w')),
    `The signer "${key('w')}" does not have the "pike::can-create-agents" permission for org "acme"`,
  );
});

t.test('no organization acts for another: takeover steps refused, consented cross-org roles work', async (t) => {
  const ledger = freshLedger(t);
  const evil = key('evil-admin');
  runAll(t, ledger, [[evil, { action: 'create_organization', org_id: 'evil', name: 'Evil' }]]);
  const acmeState = (): string[] =>
    [organizationAddress('acme'), roleAddress('acme', 'admin'), roleAddress('acme', 'r'), agentAddress(ADMIN_A), agentAddress(key('evil-2'))].map(
      (a) => Buffer.from(ledger.state.get(a) ?? new Uint8Array()).toString('hex'),
    );
  const before = acmeState();
  const denied = (perm: string, org = 'acme'): string => `The signer "${evil}" does not have the "${perm}" permission for org "${org}"`;
  const steps: Array<[GridActionInput, string]> = [
    // Upstream checks role actions in the signer's own organization: these went through.
    [{ action: 'create_role', org_id: 'acme', name: 'r', permissions: ['pike::can-create-agents'] }, denied('pike::can-create-roles')],
    [{ action: 'update_role', org_id: 'acme', name: 'admin2', permissions: ['pike::can-create-agents'] }, denied('pike::can-update-roles')],
    [{ action: 'delete_role', org_id: 'acme', name: 'catalog' }, denied('pike::can-delete-roles')],
    // Any `<org>.<role>` name was accepted in an agent's roles.
    [
      { action: 'update_agent', org_id: 'evil', public_key: evil, roles: ['admin', 'acme.catalog'] },
      'Role acme.catalog does not exist or does not list organization evil in its allowed organizations',
    ],
    [
      { action: 'update_agent', org_id: 'evil', public_key: evil, roles: ['admin', 'acme.nope'] },
      'Role acme.nope does not exist or does not list organization evil in its allowed organizations',
    ],
    [{ action: 'create_agent', org_id: 'acme', public_key: key('evil-2'), roles: ['admin'] }, denied('pike::can-create-agents')],
    [{ action: 'update_agent', org_id: 'acme', public_key: ADMIN_A, roles: ['admin'], active: false }, denied('pike::can-update-agents')],
    [{ action: 'update_organization', org_id: 'acme', name: 'Owned' }, denied('pike::can-update-organization')],
  ];
  for (const [action, message] of steps) t.equal(ledger.submit(tx(action), evil), message, `${action.action} refused`);

  // A role of its own that names acme in allowed_organizations gives evil nothing in acme.
  runAll(t, ledger, [
    [
      evil,
      {
        action: 'create_role',
        org_id: 'evil',
        name: 'reach',
        permissions: ['pike::can-create-agents', 'product::can-create-product'],
        allowed_organizations: ['acme'],
      },
    ],
    [evil, { action: 'update_agent', org_id: 'evil', public_key: evil, roles: ['admin', 'reach'], active: true }],
  ]);
  t.equal(
    ledger.submit(tx({ action: 'create_agent', org_id: 'acme', public_key: key('evil-2'), roles: ['admin'] }), evil),
    denied('pike::can-create-agents'),
  );
  t.equal(
    ledger.submit(tx({ action: 'create_product', product_id: GTIN14, owner: 'acme', properties: PRODUCT_PROPS }), evil),
    denied('product::can-create-product'),
  );
  t.same(acmeState(), before, "acme's records unchanged");

  // Schemas are checked in the owning organization; purchase orders need the signer's org as a party.
  t.equal(
    ledger.submit(tx({ action: 'create_schema', name: 'mine', owner: 'acme', properties: [{ name: 'x', data_type: 'STRING' }] }), CLERK_A),
    undefined,
    "acme's clerk creates an acme schema",
  );
  runAll(t, ledger, [[evil, { action: 'update_role', org_id: 'evil', name: 'reach', permissions: ['schema::can-create-schema', 'po::partner'] }]]);
  t.equal(
    ledger.submit(tx({ action: 'create_schema', name: 'theirs', owner: 'acme', properties: [{ name: 'x', data_type: 'STRING' }] }), evil),
    denied('schema::can-create-schema'),
  );
  const po = {
    action: 'create_po',
    uid: 'PO-E',
    buyer_org_id: 'acme',
    seller_org_id: 'beta',
    workflow_state: 'issued',
    workflow_id: 'built-in::collaborative::v1',
    created_at: TS,
  };
  t.equal(ledger.submit(tx(po), evil), 'Organization evil of the signer is neither buyer nor seller of purchase order PO-E');
  t.equal(ledger.submit(tx(po), BUYER_A), undefined, 'a party creates it');
  t.equal(
    ledger.submit(tx({ action: 'update_po', po_uid: 'PO-E', workflow_state: 'closed', is_closed: true }), evil),
    'Organization evil of the signer is neither buyer nor seller of purchase order PO-E',
  );
  t.equal(
    ledger.submit(
      tx({
        action: 'update_version',
        po_uid: 'PO-E',
        version_id: 'v1',
        workflow_state: 'proposed',
        revision: { revision_number: 1, submitter: evil, created_at: TS, order_xml_v3_4: '<o/>' },
      }),
      evil,
    ),
    'Organization evil of the signer is neither buyer nor seller of purchase order PO-E',
  );
  t.equal(
    ledger.submit(
      tx({
        action: 'create_version',
        po_uid: 'PO-E',
        version_id: 'v9',
        workflow_state: 'proposed',
        revision: { revision_number: 1, submitter: evil, created_at: TS, order_xml_v3_4: '<o/>' },
      }),
      evil,
    ),
    'Organization evil of the signer is neither buyer nor seller of purchase order PO-E',
  );

  // Consent: acme's role that lists evil may be held by evil's agent and acts for acme.
  runAll(t, ledger, [
    [
      ADMIN_A,
      { action: 'create_role', org_id: 'acme', name: 'onboarding', permissions: ['pike::can-create-agents'], allowed_organizations: ['evil'] },
    ],
    [evil, { action: 'update_agent', org_id: 'evil', public_key: evil, roles: ['admin', 'acme.onboarding'], active: true }],
  ]);
  t.equal(ledger.submit(tx({ action: 'create_agent', org_id: 'acme', public_key: key('helper') }), evil), undefined, 'consented role acts for acme');
  // Still not a role writer of acme, and the grant ends when acme withdraws its consent.
  t.equal(ledger.submit(tx({ action: 'create_role', org_id: 'acme', name: 'r' }), evil), denied('pike::can-create-roles'));
  runAll(t, ledger, [
    [ADMIN_A, { action: 'update_role', org_id: 'acme', name: 'onboarding', permissions: ['pike::can-create-agents'], allowed_organizations: [] }],
  ]);
  t.equal(
    ledger.submit(tx({ action: 'create_agent', org_id: 'acme', public_key: key('helper-2') }), evil),
    denied('pike::can-create-agents'),
    'consent withdrawn',
  );
});

t.test('ids with control characters are refused by the contracts', async (t) => {
  const ledger = freshLedger(t);
  const cases: Array<[string, GridActionInput, RegExp]> = [
    [key('sep'), { action: 'create_organization', org_id: 'acme\u0005x', name: 'X' }, /^Organization ID must not contain control characters/],
    [
      key('sep'),
      { action: 'create_organization', org_id: 'sep', name: 'X', alternate_ids: ['a\u0000b:1'] },
      /^Alternate ID type must not contain control characters/,
    ],
    [ADMIN_A, { action: 'create_role', org_id: 'acme', name: 'r\u0005' }, /^Role name must not contain control characters/],
    [ADMIN_A, { action: 'create_agent', org_id: 'acme', public_key: 'k\u0005' }, /^Public key must not contain control characters/],
    [
      ADMIN_A,
      { action: 'create_agent', org_id: 'acme', public_key: key('c1'), roles: ['catalog\u0085'] },
      /^Role name must not contain control characters/,
    ],
    [
      CLERK_A,
      { action: 'create_schema', name: 's\u0005', properties: [{ name: 'x', data_type: 'STRING' }] },
      /^Schema name must not contain control characters/,
    ],
    [
      BUYER_A,
      {
        action: 'create_po',
        uid: 'PO-X\u00051',
        buyer_org_id: 'acme',
        seller_org_id: 'beta',
        workflow_state: 'issued',
        workflow_id: 'built-in::collaborative::v1',
        created_at: TS,
      },
      /^Purchase order UID must not contain control characters/,
    ],
  ];
  for (const [signer, action, message] of cases) t.match(ledger.submit(tx(action), signer), message, `${action.action} refused`);
  t.notOk(ledger.state.has(organizationAddress('acme\u0005x')), 'nothing written');
});

t.test('schemas', async (t) => {
  const ledger = freshLedger(t);
  const fails: Array<[string, GridActionInput, string]> = [
    [
      CLERK_A,
      { action: 'create_schema', name: 'gs1_product', properties: [{ name: 'x', data_type: 'STRING' }] },
      'Schema with name gs1_product already exists',
    ],
    [
      key('ghost'),
      { action: 'create_schema', name: 's2', properties: [{ name: 'x', data_type: 'STRING' }] },
      `The signer is not an Agent: ${key('ghost')}`,
    ],
    [
      BUYER_A,
      { action: 'create_schema', name: 's2', properties: [{ name: 'x', data_type: 'STRING' }] },
      `The signer "${BUYER_A}" does not have the "schema::can-create-schema" permission for org "acme"`,
    ],
    [CLERK_A, { action: 'update_schema', name: 'nope', properties: [{ name: 'x', data_type: 'STRING' }] }, 'Schema with name nope does not exist'],
    [
      CLERK_A,
      { action: 'update_schema', name: 'gs1_product', properties: [{ name: 'GDSN_3_1', data_type: 'STRING' }] },
      'Schema already has PropertyDefinition with name GDSN_3_1',
    ],
    [
      ADMIN_B,
      { action: 'update_schema', name: 'gs1_product', properties: [{ name: 'brand', data_type: 'STRING' }] },
      `The signer "${ADMIN_B}" does not have the "schema::can-update-schema" permission for org "acme"`,
    ],
  ];
  for (const [signer, action, message] of fails) t.equal(ledger.submit(tx(action), signer), message, message);
  const empty = { familyName: 'grid_schema', familyVersion: '2', inputs: ['621dee'], outputs: ['621dee'] };
  t.equal(
    ledger.submit({ ...empty, payload: encodeMsg(G.SchemaPayload, { action: 1, schemaCreate: { schemaName: 'e' } }) }, CLERK_A),
    'Properties must not be empty',
  );
  t.equal(ledger.submit({ ...empty, payload: encodeMsg(G.SchemaPayload, { action: 1, schemaCreate: {} }) }, CLERK_A), 'Schema name must be set');
  t.equal(
    ledger.submit(
      { ...empty, payload: encodeMsg(G.SchemaPayload, { action: 1, schemaCreate: { schemaName: 'e', properties: [{ name: 'p' }] } }) },
      CLERK_A,
    ),
    'Invalid data type for property definition p',
  );
  t.equal(ledger.submit({ ...empty, payload: encodeMsg(G.SchemaPayload, { action: 0 }) }, CLERK_A), 'Invalid action');
  t.match(ledger.submit({ ...empty, payload: Uint8Array.of(0x0a, 0x05, 0x01) }, CLERK_A), /^Cannot decode schema payload/);

  // Append-only update: new definitions are added after the existing ones.
  t.equal(
    ledger.submit(
      tx({
        action: 'update_schema',
        name: 'gs1_product',
        properties: [
          { name: 'brand', data_type: 'STRING' },
          { name: 'Aardvark', data_type: 'NUMBER' },
        ],
      }),
      CLERK_A,
    ),
    undefined,
  );
  const s = decodeAt(ledger, G.SchemaList, schemaAddress('gs1_product')).schemas as Array<{ properties: Array<{ name: string }>; owner: string }>;
  t.same(
    s[0]?.properties.map((p) => p.name),
    ['GDSN_3_1', 'brand', 'Aardvark'],
  );
  t.equal(s[0]?.owner, 'acme');
});

t.test('products: GTINs, prefixes, schema-checked properties, permissions', async (t) => {
  const ledger = freshLedger(t);
  const create = (id: string, props: unknown[] = PRODUCT_PROPS, owner = 'acme'): GridActionInput => ({
    action: 'create_product',
    product_id: id,
    owner,
    properties: props,
  });
  const fails: Array<[string, GridActionInput, string]> = [
    [
      CLERK_A,
      create(GTIN14.slice(0, 13) + String((Number(GTIN14[13]) + 1) % 10)),
      `Invalid gtin, check digit validation failed: ${GTIN14.slice(0, 13)}${(Number(GTIN14[13]) + 1) % 10}`,
    ],
    [CLERK_A, create('06141418'), 'Invalid GTIN, GTIN-8 is not supported at this time: 06141418'],
    [CLERK_A, create('0614141abc'), 'Invalid format, GTIN identifiers only contain numbers: 0614141abc'],
    [CLERK_A, create('061414100000000099'), 'Invalid length for GTIN identifier: 061414100000000099'],
    [CLERK_A, create(GTIN14, []), "Missing required field 'GDSN_3_1' of type 'String'"],
    [CLERK_A, create(GTIN14, [{ name: 'GDSN_3_1', data_type: 'NUMBER', value: 5 }]), "Missing required field 'GDSN_3_1' of type 'String'"],
    [
      CLERK_A,
      create(GTIN14, [...PRODUCT_PROPS, { name: 'color', data_type: 'STRING', value: 'red' }]),
      'color is not a property that is defined by the gs1 schema',
    ],
    [
      CLERK_A,
      create(withCheck('0001234500001')),
      `The agents organization does not own the GS1 company prefix in the GTIN product_id: [AlternateId { id_type: "gs1_company_prefix", id: "${PREFIX_A}" }]`,
    ],
    [NOBODY_A, create(GTIN14), `The signer "${NOBODY_A}" does not have the "product::can-create-product" permission for org "acme"`],
    [
      CLERK_A,
      create(GTIN14, PRODUCT_PROPS, 'beta'),
      `The signer "${CLERK_A}" does not have the "product::can-create-product" permission for org "beta"`,
    ],
  ];
  for (const [signer, action, message] of fails) t.equal(ledger.submit(tx(action), signer), message, message);

  const base = { familyName: 'grid_product', familyVersion: '2', inputs: ['621dee'], outputs: ['621dee02'] };
  const raw = (p: object): string | undefined => ledger.submit({ ...base, payload: encodeMsg(G.ProductPayload, p) }, CLERK_A);
  t.equal(raw({ action: 1, productCreate: { productId: GTIN14 } }), 'Timestamp is not set');
  t.equal(raw({ action: 1, timestamp: TS, productCreate: { productId: '', owner: 'acme' } }), 'product_id cannot be empty string');
  t.equal(raw({ action: 1, timestamp: TS, productCreate: { productId: GTIN14 } }), 'Owner cannot be empty string');
  t.equal(
    raw({ action: 1, timestamp: TS, productCreate: { productId: GTIN14, owner: 'acme', productNamespace: 0 } }),
    'Invalid product namespace enum for product',
  );
  t.equal(raw({ action: 9, timestamp: TS }), 'Invalid action');
  t.equal(
    raw({ action: 1, timestamp: TS, productCreate: { productId: GTIN14, owner: 'ghost', productNamespace: 1 } }),
    `The signer "${CLERK_A}" does not have the "product::can-create-product" permission for org "ghost"`,
  );

  // An org without a company prefix. Acme's own role naming delta grants nothing in delta;
  // delta's role that lets acme agents hold it does.
  const productPerms = ['product::can-create-product', 'product::can-update-product', 'product::can-delete-product'];
  runAll(t, ledger, [
    [key('delta-admin'), { action: 'create_organization', org_id: 'delta', name: 'Delta' }],
    [ADMIN_A, { action: 'update_role', org_id: 'acme', name: 'catalog', permissions: productPerms, allowed_organizations: ['delta'] }],
  ]);
  t.equal(
    ledger.submit(tx(create(GTIN14, PRODUCT_PROPS, 'delta')), CLERK_A),
    `The signer "${CLERK_A}" does not have the "product::can-create-product" permission for org "delta"`,
    "acme's role cannot act for delta",
  );
  runAll(t, ledger, [
    [key('delta-admin'), { action: 'create_role', org_id: 'delta', name: 'catalog', permissions: productPerms, allowed_organizations: ['acme'] }],
    [ADMIN_A, { action: 'update_agent', org_id: 'acme', public_key: CLERK_A, roles: ['catalog', 'delta.catalog'], active: true }],
  ]);
  t.equal(
    ledger.submit(tx(create(GTIN14, PRODUCT_PROPS, 'delta')), CLERK_A),
    'The agents organization does not have the gs1_company_prefix prefix: []',
  );

  // Without the schema there can be no products.
  const noSchema = new MemoryLedger(gridFamilies);
  runAll(t, noSchema, setupSteps().slice(0, 9));
  t.equal(noSchema.submit(tx(create(GTIN14)), CLERK_A), 'gs1_product schema has not been defined');

  t.equal(ledger.submit(tx(create(GTIN14)), CLERK_A), undefined, 'GTIN-14 product created');
  t.equal(ledger.submit(tx(create(GTIN13)), CLERK_A), undefined, 'GTIN-13 product created');
  t.equal(ledger.submit(tx(create(GTIN14)), CLERK_A), `Product already exists: ${GTIN14}`);
  const stored = decodeAt(ledger, G.ProductList, productAddress(GTIN14)).entries as Array<Record<string, unknown>>;
  t.same(stored[0], {
    productId: GTIN14,
    productNamespace: 1,
    owner: 'acme',
    properties: [
      {
        name: 'GDSN_3_1',
        dataType: 4,
        bytesValue: Buffer.alloc(0),
        booleanValue: false,
        numberValue: 0,
        stringValue: '<tradeItem/>',
        enumValue: 0,
        structValues: [],
        latLongValue: null,
      },
    ],
  });

  const upd = { action: 'update_product', product_id: GTIN14, properties: [{ name: 'GDSN_3_1', data_type: 'STRING', value: '<v2/>' }] };
  t.equal(ledger.submit(tx(upd), NOBODY_A), `The signer "${NOBODY_A}" does not have the "product::can-update-product" permission for org "acme"`);
  t.equal(ledger.submit(tx({ ...upd, properties: [] }), CLERK_A), "Missing required field 'GDSN_3_1' of type 'String'");
  t.equal(ledger.submit(tx({ ...upd, product_id: withCheck('0061414100009') }), CLERK_A), `No product exists: ${withCheck('0061414100009')}`);
  t.equal(ledger.submit(tx(upd), CLERK_A), undefined, 'product updated');
  const after = decodeAt(ledger, G.ProductList, productAddress(GTIN14)).entries as Array<{ properties: Array<{ stringValue: string }> }>;
  t.equal(after[0]?.properties[0]?.stringValue, '<v2/>');

  t.equal(
    ledger.submit(tx({ action: 'delete_product', product_id: GTIN13 }), NOBODY_A),
    `The signer "${NOBODY_A}" does not have the "product::can-delete-product" permission for org "acme"`,
  );
  t.equal(ledger.submit(tx({ action: 'delete_product', product_id: GTIN13 }), CLERK_A), undefined, 'product deleted');
  t.notOk(ledger.state.has(productAddress(GTIN13)), 'product entry removed');
  t.equal(ledger.submit(tx({ action: 'delete_product', product_id: GTIN13 }), CLERK_A), `No product exists: ${GTIN13}`);
  // A failed transaction leaves state untouched.
  const before = new Map(ledger.state);
  t.ok(ledger.submit(tx(create(GTIN14)), CLERK_A));
  t.same([...ledger.state.keys()].sort(), [...before.keys()].sort());
});

t.test('locations: GLNs, schema-checked properties, permissions', async (t) => {
  const ledger = freshLedger(t);
  const create = (id: string, props: unknown[] = LOCATION_PROPS, owner = 'acme'): GridActionInput => ({
    action: 'create_location',
    location_id: id,
    owner,
    properties: props,
  });
  const badGln = GLN.slice(0, 12) + String((Number(GLN[12]) + 1) % 10);
  const fails: Array<[string, GridActionInput, string]> = [
    [CLERK_A, create(badGln), `Invalid GLN: ${badGln}`],
    [CLERK_A, create('06141410001'), 'Invalid GLN: 06141410001'],
    [CLERK_A, create(GLN, LOCATION_PROPS, 'ghost'), 'Organization ghost is not registered with Pike'],
    [NOBODY_A, create(GLN), `The signer "${NOBODY_A}" does not have the "location::can-create-location" permission for org "acme"`],
    [CLERK_A, create(withCheck('001234500001')), 'Organization acme does not have the correct gs1 prefix'],
    [
      CLERK_A,
      create(
        GLN,
        LOCATION_PROPS.filter((p) => p.name !== 'locationType'),
      ),
      "Missing required field 'locationType' of type 'Enum'",
    ],
    [
      CLERK_A,
      create(
        GLN,
        LOCATION_PROPS.map((p) => (p.name === 'addressLine1' ? { ...p, data_type: 'BYTES', value: 'AAAA' } : p)),
      ),
      "Missing required field 'addressLine1' of type 'String'",
    ],
    [
      CLERK_A,
      create(GLN, [...LOCATION_PROPS, { name: 'bogus', data_type: 'STRING', value: '' }]),
      'bogus is not a property that is defined by the gs1 schema',
    ],
  ];
  for (const [signer, action, message] of fails) t.equal(ledger.submit(tx(action), signer), message, message);
  const base = { familyName: 'grid_location', familyVersion: '2', inputs: ['621dee'], outputs: ['621dee04'] };
  t.equal(
    ledger.submit({ ...base, payload: encodeMsg(G.LocationPayload, { action: 1, locationCreate: { locationId: GLN, namespace: 0 } }) }, CLERK_A),
    'Invalid location namespace enum for location',
  );
  t.equal(ledger.submit({ ...base, payload: encodeMsg(G.LocationPayload, { action: 0 }) }, CLERK_A), 'Invalid action');

  const noSchema = new MemoryLedger(gridFamilies);
  runAll(t, noSchema, setupSteps().slice(0, 9));
  t.equal(noSchema.submit(tx(create(GLN)), CLERK_A), 'gs1_location schema has not been defined');

  t.equal(ledger.submit(tx(create(GLN)), CLERK_A), undefined, 'location created');
  t.equal(ledger.submit(tx(create(GLN)), CLERK_A), `A location with GLN ${GLN} already exists`);
  const upd = { action: 'update_location', location_id: GLN, properties: LOCATION_PROPS.slice(0, 3) };
  t.equal(ledger.submit(tx(upd), NOBODY_A), `The signer "${NOBODY_A}" does not have the "location::can-update-location" permission for org "acme"`);
  t.equal(ledger.submit(tx({ ...upd, properties: [] }), CLERK_A), "Missing required field 'locationDescription' of type 'String'");
  t.equal(ledger.submit(tx({ ...upd, location_id: '5412345000013' }), CLERK_A), 'A location with GLN 5412345000013 does not exist');
  t.equal(ledger.submit(tx({ ...upd, location_id: 'short' }), CLERK_A), 'A location with GLN short does not exist');
  t.equal(ledger.submit(tx(upd), CLERK_A), undefined, 'location updated');
  const stored = decodeAt(ledger, G.LocationList, locationAddress(GLN)).entries as Array<{ properties: unknown[] }>;
  t.equal(stored[0]?.properties.length, 3, 'properties replaced');
  t.equal(
    ledger.submit(tx({ action: 'delete_location', location_id: GLN }), NOBODY_A),
    `The signer "${NOBODY_A}" does not have the "location::can-delete-location" permission for org "acme"`,
  );
  t.equal(ledger.submit(tx({ action: 'delete_location', location_id: GLN }), CLERK_A), undefined, 'location deleted');
  t.notOk(ledger.state.has(locationAddress(GLN)));
});

t.test('purchase order: collaborative workflow to confirmed, three revisions, closed', async (t) => {
  const ledger = freshLedger(t);
  const steps = flowSteps();
  runAll(t, ledger, steps.slice(0, 3));

  let po = decodePo(ledger, 'PO-00001');
  t.equal(po.workflowState, 'issued');
  t.equal(po.workflowId, 'built-in::collaborative::v1');
  t.same(po.alternateIds, [{ idType: 'po_number', id: '4500001', poUid: 'PO-00001' }]);
  const v1 = (): Record<string, unknown> => (decodePo(ledger, 'PO-00001').versions as Array<Record<string, unknown>>)[0] as Record<string, unknown>;
  t.same(v1().revisions, [{ revisionId: 1, submitter: BUYER_A, createdAt: TS + 1, orderXmlV3_4: XML(1) }]);

  runAll(t, ledger, steps.slice(3, 5));
  t.equal(v1().workflowState, 'modified');
  t.equal(v1().currentRevisionId, 3);
  t.same(
    (v1().revisions as Array<{ revisionId: number }>).map((r) => r.revisionId),
    [1, 2, 3],
    'revisions numbered 1, 2, 3 (payload numbers are overridden)',
  );

  // Re-sending revision 1 unchanged selects it instead of adding a revision.
  const resend = {
    action: 'update_version',
    po_uid: 'PO-00001',
    version_id: 'v1',
    workflow_state: 'modified',
    revision: { revision_number: 1, submitter: BUYER_A, created_at: TS + 1, order_xml_v3_4: XML(1) },
  };
  t.equal(ledger.submit(tx(resend), SELLER_B), undefined);
  t.equal(v1().currentRevisionId, 1);
  t.equal((v1().revisions as unknown[]).length, 3);

  // Refused: accepting the version while the order is not confirmed.
  t.equal(
    ledger.submit(tx({ ...resend, workflow_state: 'accepted' }), SELLER_B),
    'Purchase order PO-00001 must be in an accepted state to accept version v1',
  );
  // Refused: confirming without an accepted version.
  t.equal(
    ledger.submit(tx({ action: 'update_po', po_uid: 'PO-00001', workflow_state: 'confirmed' }), BUYER_A),
    'Purchase order PO-00001 requires an accepted version to be in state confirmed',
  );

  runAll(t, ledger, steps.slice(5));
  po = decodePo(ledger, 'PO-00001');
  t.equal(po.workflowState, 'confirmed');
  t.equal(po.acceptedVersionNumber, 'v1');
  t.equal(v1().workflowState, 'accepted');
  t.equal(v1().currentRevisionId, 1, 'repeating the latest revision in an order update changes no revision data');
  t.same(
    (v1().revisions as Array<{ revisionId: number }>).map((r) => r.revisionId),
    [1, 2, 3],
  );

  // Invalid transitions and actions on the confirmed order.
  const upd = (fields: Record<string, unknown>): GridActionInput => ({
    action: 'update_po',
    po_uid: 'PO-00001',
    accepted_version_number: 'v1',
    ...fields,
  });
  const fails: Array<[string, GridActionInput, string]> = [
    [BUYER_A, upd({ workflow_state: 'bogus' }), 'No permission exists to allow transitioning to a state of bogus'],
    [
      BUYER_A,
      upd({ workflow_state: 'proposed' }),
      `Agent ${BUYER_A} does not have the correct permissions for organization acme to update purchase order PO-00001 to a status of proposed`,
    ],
    [
      NOBODY_A,
      upd({ workflow_state: 'confirmed' }),
      `Agent ${NOBODY_A} does not have the correct permissions for organization acme to update purchase order PO-00001 to a status of confirmed`,
    ],
    [BUYER_A, upd({ workflow_state: 'closed' }), 'Purchase order PO-00001 must be marked closed to be in state closed'],
    [BUYER_A, upd({ workflow_state: 'closed', is_closed: true }), 'Purchase order PO-00001 cannot be closed with an accepted version'],
    [BUYER_A, upd({ workflow_state: 'confirmed', accepted_version_number: 'v9' }), 'Accepted version v9 does not exist for purchase order PO-00001'],
    [BUYER_A, upd({ workflow_state: 'issued' }), 'Purchase order PO-00001 cannot have an accepted version in state issued'],
    [
      BUYER_A,
      upd({ workflow_state: 'issued', accepted_version_number: '' }),
      'Purchase order PO-00001 has a version in an accepted state but no accepted version',
    ],
    [
      SELLER_B,
      {
        action: 'update_version',
        po_uid: 'PO-00001',
        version_id: 'v1',
        workflow_state: 'proposed',
        revision: { submitter: SELLER_B, order_xml_v3_4: XML(9) },
      },
      `Agent ${SELLER_B} does not have the correct permissions for organization beta to update purchase order version v1 of PO-00001 to a status of proposed`,
    ],
    [
      SELLER_B,
      {
        action: 'update_version',
        po_uid: 'PO-00001',
        version_id: 'v1',
        workflow_state: 'obsolete',
        revision: { submitter: SELLER_B, order_xml_v3_4: XML(9) },
      },
      'Version v1 is the accepted version of purchase order PO-00001 and cannot leave state accepted',
    ],
    [
      SELLER_B,
      {
        action: 'update_version',
        po_uid: 'PO-00001',
        version_id: 'v9',
        workflow_state: 'proposed',
        revision: { submitter: SELLER_B, order_xml_v3_4: XML(9) },
      },
      'Cannot update version v9 that does not exist',
    ],
    [
      BUYER_A,
      upd({
        workflow_state: 'confirmed',
        version_updates: [{ version_id: 'v9', workflow_state: 'accepted', revision: { submitter: BUYER_A, order_xml_v3_4: 'x' } }],
      }),
      'Cannot update version v9 that does not exist',
    ],
  ];
  for (const [signer, action, message] of fails) t.equal(ledger.submit(tx(action), signer), message, message);

  // A second version may be proposed, but cannot be accepted alongside v1.
  t.equal(
    ledger.submit(
      tx({
        action: 'create_version',
        po_uid: 'PO-00001',
        version_id: 'v2',
        workflow_state: 'proposed',
        revision: { submitter: SELLER_B, order_xml_v3_4: XML(20) },
      }),
      SELLER_B,
    ),
    undefined,
  );
  t.equal(
    ledger.submit(
      tx({
        action: 'create_version',
        po_uid: 'PO-00001',
        version_id: 'v2',
        workflow_state: 'proposed',
        revision: { submitter: SELLER_B, order_xml_v3_4: XML(20) },
      }),
      SELLER_B,
    ),
    'Version v2 already exists for Purchase Order PO-00001',
  );
  t.equal(
    ledger.submit(
      tx(
        upd({
          workflow_state: 'confirmed',
          version_updates: [{ version_id: 'v2', workflow_state: 'accepted', revision: { submitter: SELLER_B, order_xml_v3_4: XML(20) } }],
        }),
      ),
      SELLER_B,
    ),
    'Purchase order PO-00001 cannot have more than one version in an accepted state',
  );
  t.equal(
    ledger.submit(
      tx({
        action: 'update_version',
        po_uid: 'PO-00001',
        version_id: 'v2',
        workflow_state: 'accepted',
        revision: { submitter: SELLER_B, order_xml_v3_4: XML(20) },
      }),
      SELLER_B,
    ),
    'Purchase order PO-00001 does not name version v2 as its accepted version',
  );
  t.equal(
    ledger.submit(
      tx({
        action: 'update_version',
        po_uid: 'PO-00001',
        version_id: 'v2',
        workflow_state: 'rejected',
        revision: { submitter: SELLER_B, order_xml_v3_4: XML(20) },
      }),
      SELLER_B,
    ),
    undefined,
    'v2 rejected',
  );

  // Close: PO → closed, no accepted version, v1 → obsolete, all in one update.
  const [closer, close] = closeStep();
  t.equal(ledger.submit(tx(close), closer), undefined, 'closed');
  po = decodePo(ledger, 'PO-00001');
  t.equal(po.workflowState, 'closed');
  t.equal(po.isClosed, true);
  t.equal(po.acceptedVersionNumber, '');
  t.same(po.alternateIds, [], 'alternate ids replaced by the (empty) payload list');
  t.equal(v1().workflowState, 'obsolete');
  t.same(
    (v1().revisions as Array<{ revisionId: number }>).map((r) => r.revisionId),
    [1, 2, 3],
  );
  // Nothing moves a closed order.
  t.equal(
    ledger.submit(tx({ action: 'update_po', po_uid: 'PO-00001', workflow_state: 'closed', is_closed: true }), BUYER_A),
    `Agent ${BUYER_A} does not have the correct permissions for organization acme to update purchase order PO-00001 to a status of closed`,
  );
  t.equal(
    ledger.submit(tx({ action: 'update_po', po_uid: 'PO-00001', workflow_state: 'issued' }), BUYER_A),
    `Agent ${BUYER_A} does not have the correct permissions for organization acme to update purchase order PO-00001 to a status of issued`,
  );
});

t.test('purchase order: payload validation and creation rules', async (t) => {
  const ledger = freshLedger(t);
  const base = { familyName: 'grid_purchase_order', familyVersion: '2', inputs: ['621dee06', '621dee05'], outputs: ['621dee06'] };
  const raw = (p: object, signer = BUYER_A): string | undefined => ledger.submit({ ...base, payload: encodeMsg(G.PurchaseOrderPayload, p) }, signer);
  const rev = { revisionId: 1, submitter: BUYER_A, createdAt: TS, orderXmlV3_4: XML(1) };
  const po = {
    uid: 'PO-2',
    createdAt: TS,
    buyerOrgId: 'acme',
    sellerOrgId: 'beta',
    workflowState: 'issued',
    workflowId: 'built-in::collaborative::v1',
  };
  const ver = { versionId: 'v1', poUid: 'PO-2', workflowState: 'proposed', revision: rev };
  const cases: Array<[object, string]> = [
    [{ action: 1, createPoPayload: po }, "Payload's `timestamp` field is unset"],
    [{ action: 1, timestamp: TS, createPoPayload: { ...po, uid: '' } }, '`uid` is required to create a purchase order'],
    [{ action: 1, timestamp: TS, createPoPayload: { ...po, buyerOrgId: '' } }, '`buyer_org_id` is required to create a purchase order'],
    [{ action: 1, timestamp: TS, createPoPayload: { ...po, sellerOrgId: '' } }, '`seller_org_id` is required to create a purchase order'],
    [{ action: 1, timestamp: TS, createPoPayload: { ...po, createdAt: 0 } }, '`created_at` is required to create a purchase order'],
    [{ action: 1, timestamp: TS, createPoPayload: { ...po, workflowState: '' } }, '`workflow_state` is required to create a purchase order'],
    [{ action: 1, timestamp: TS, createPoPayload: { ...po, workflowId: '' } }, '`workflow_id` is required to create a purchase order'],
    [{ action: 1, timestamp: TS, createPoPayload: { ...po, workflowId: 'custom' } }, 'No workflow exists with id custom'],
    [
      { action: 1, timestamp: TS, createPoPayload: { ...po, createVersionPayload: { ...ver, poUid: 'PO-3' } } },
      'Version v1 must refer to purchase order PO-2 within the payload, refers to purchase order PO-3',
    ],
    [
      { action: 1, timestamp: TS, createPoPayload: { ...po, createVersionPayload: { ...ver, revision: { ...rev, revisionId: 2 } } } },
      'Revision IDs begin incrementing at `1`, attempting to create a new version with revision ID `2`',
    ],
    [{ action: 3, timestamp: TS, createVersionPayload: { ...ver, versionId: '' } }, '`version_id` is required to create a purchase order version'],
    [{ action: 3, timestamp: TS, createVersionPayload: { ...ver, poUid: '' } }, '`po_uid` is required to create a purchase order version'],
    [
      { action: 3, timestamp: TS, createVersionPayload: { ...ver, workflowState: '' } },
      '`workflow_state` is required to create a purchase order version',
    ],
    [
      { action: 3, timestamp: TS, createVersionPayload: { ...ver, revision: { ...rev, submitter: '' } } },
      '`submitter` is required for a po revision',
    ],
    [
      { action: 3, timestamp: TS, createVersionPayload: { ...ver, revision: { ...rev, orderXmlV3_4: '' } } },
      '`order_xml_v3_4` is required for a po revision',
    ],
    [{ action: 3, timestamp: TS, createVersionPayload: { ...ver, revision: { ...rev, createdAt: 0 } } }, 'Invalid `created_at` value, must not be 0'],
    [{ action: 4, timestamp: TS, updateVersionPayload: { ...ver, revision: { ...rev, revisionId: 0 } } }, '`revision_id` must be greater than 0'],
    [{ action: 4, timestamp: TS, updateVersionPayload: { ...ver, versionId: '' } }, '`version_id` is required to update a purchase order version'],
    [{ action: 4, timestamp: TS, updateVersionPayload: { ...ver, poUid: '' } }, '`po_uid` is required to update a purchase order version'],
    [
      { action: 4, timestamp: TS, updateVersionPayload: { ...ver, workflowState: '' } },
      '`workflow_state` is required to update a purchase order version',
    ],
    [{ action: 2, timestamp: TS, updatePoPayload: { workflowState: 'issued' } }, '`uid` is required to update a purchase order'],
    [{ action: 2, timestamp: TS, updatePoPayload: { poUid: 'PO-2' } }, '`workflow_state` is required to update a purchase order'],
    [
      { action: 2, timestamp: TS, updatePoPayload: { poUid: 'PO-2', workflowState: 'issued', versionUpdates: [ver, ver] } },
      'Multiple update payloads detected for version v1',
    ],
    [
      { action: 2, timestamp: TS, updatePoPayload: { poUid: 'PO-2', workflowState: 'issued', versionUpdates: [{ ...ver, poUid: 'X' }] } },
      'Version v1 must refer to purchase order PO-2 within the payload, refers to purchase order X',
    ],
    [{ action: 2, timestamp: TS, updatePoPayload: { poUid: 'PO-2', workflowState: 'issued' } }, 'No purchase order exists: PO-2'],
    [{ action: 4, timestamp: TS, updateVersionPayload: ver }, 'No purchase order exists: PO-2'],
    [{ action: 3, timestamp: TS, createVersionPayload: ver }, 'Purchase order PO-2 does not exist'],
    [{ action: 0, timestamp: TS }, 'Invalid action'],
    [{ action: 1, timestamp: TS, createPoPayload: { ...po, buyerOrgId: 'ghost' } }, 'Organization ghost does not exist'],
    [
      { action: 1, timestamp: TS, createPoPayload: { ...po, workflowState: 'confirmed' } },
      `Agent ${BUYER_A} does not have the correct permissions for organization acme to create a purchase order PO-2 with a status of confirmed`,
    ],
    [
      { action: 1, timestamp: TS, createPoPayload: { ...po, workflowState: 'nowhere' } },
      'Workflow state `nowhere` does not exist in `po` subworkflow',
    ],
    [
      { action: 1, timestamp: TS, createPoPayload: { ...po, createVersionPayload: { ...ver, workflowState: 'limbo' } } },
      'Workflow state `limbo` does not exist in `version` subworkflow',
    ],
    [
      { action: 1, timestamp: TS, createPoPayload: { ...po, createVersionPayload: { ...ver, workflowState: 'accepted' } } },
      `Agent ${BUYER_A} does not have the correct permissions for organization acme to create purchase order version v1 with a status of accepted`,
    ],
  ];
  for (const [payload, message] of cases) t.equal(raw(payload), message, message);
  t.equal(raw({ action: 1, timestamp: TS, createPoPayload: po }, key('ghost')), `The signer is not an Agent: ${key('ghost')}`);
  t.equal(
    raw({ action: 1, timestamp: TS, createPoPayload: po }, CLERK_A),
    `Agent ${CLERK_A} does not have the correct permissions for organization acme to create a purchase order PO-2 with a status of issued`,
  );

  // A PO without a version, then a version added separately; "create" means the start state.
  t.equal(
    ledger.submit(tx({ action: 'create_po', uid: 'PO-2', buyer_org_id: 'acme', seller_org_id: 'beta', workflow_state: 'create' }), BUYER_A),
    undefined,
  );
  t.equal(raw({ action: 1, timestamp: TS, createPoPayload: po }), 'Purchase Order already exists: PO-2');
  t.equal(
    ledger.submit(
      tx({ action: 'create_version', po_uid: 'PO-2', version_id: 'a', revision: { order_xml_v3_4: XML(1) } }, 'plain', SELLER_B),
      SELLER_B,
    ),
    undefined,
    'version in the start state, submitter defaulting to the signer',
  );
  const created = decodePo(ledger, 'PO-2');
  t.equal(created.workflowState, 'issued');
  t.same(
    (created.versions as Array<{ workflowState: string; revisions: Array<{ submitter: string }> }>).map((v) => [
      v.workflowState,
      v.revisions[0]?.submitter,
    ]),
    [['proposed', SELLER_B]],
  );
  t.equal(
    ledger.submit(
      tx({ action: 'create_version', po_uid: 'PO-2', version_id: 'b', revision: { order_xml_v3_4: XML(1) } }, 'plain', NOBODY_A),
      NOBODY_A,
    ),
    `Agent ${NOBODY_A} does not have the correct permissions for organization acme to create purchase order version b with a status of proposed`,
  );
  // Issued → closed directly is allowed for a partner.
  t.equal(
    ledger.submit(
      tx(
        {
          action: 'update_po',
          po_uid: 'PO-2',
          workflow_state: 'closed',
          is_closed: true,
          version_updates: [{ version_id: 'a', workflow_state: 'obsolete', revision: { order_xml_v3_4: XML(2) } }],
        },
        'plain',
        BUYER_A,
      ),
      BUYER_A,
    ),
    undefined,
  );
  t.equal(decodePo(ledger, 'PO-2').isClosed, true);
});

t.test('purchase order: system-of-record workflow with drafts', async (t) => {
  const ledger = freshLedger(t);
  runAll(t, ledger, [
    [ADMIN_A, { action: 'create_role', org_id: 'acme', name: 'buyer', permissions: ['po::buyer', 'po::draft'] }],
    [ADMIN_B, { action: 'create_role', org_id: 'beta', name: 'seller', permissions: ['po::seller'] }],
    [ADMIN_A, { action: 'update_agent', org_id: 'acme', public_key: BUYER_A, roles: ['buyer'] }],
    [ADMIN_B, { action: 'update_agent', org_id: 'beta', public_key: SELLER_B, roles: ['seller'] }],
  ]);
  const sor = 'built-in::system_of_record::v1';
  const rev = (n: number): Record<string, unknown> => ({ submitter: BUYER_A, order_xml_v3_4: XML(n), created_at: TS + n });
  const createPo = (fields: Record<string, unknown>): GridActionInput => ({
    action: 'create_po',
    uid: 'PO-S',
    buyer_org_id: 'acme',
    seller_org_id: 'beta',
    workflow_id: sor,
    ...fields,
  });
  t.equal(
    ledger.submit(tx(createPo({ create_version_payload: { version_id: 'd1', workflow_state: 'editable', revision: rev(1) } })), BUYER_A),
    'Version d1 must be a draft to be in state editable',
  );
  t.equal(
    ledger.submit(tx(createPo({ create_version_payload: { version_id: 'd1', workflow_state: 'proposed', revision: rev(1) } })), SELLER_B),
    `Agent ${SELLER_B} does not have the correct permissions for organization beta to create purchase order version d1 with a status of proposed`,
  );
  t.equal(
    ledger.submit(tx(createPo({ create_version_payload: { version_id: 'd1', is_draft: true, revision: rev(1) } })), BUYER_A),
    undefined,
    'draft version',
  );
  let po = decodePo(ledger, 'PO-S');
  t.same(
    (po.versions as Array<Record<string, unknown>>).map((v) => [v.versionId, v.workflowState, v.isDraft]),
    [['d1', 'editable', true]],
  );
  const updV = (state: string, isDraft: boolean, n: number): GridActionInput => ({
    action: 'update_version',
    po_uid: 'PO-S',
    version_id: 'd1',
    workflow_state: state,
    is_draft: isDraft,
    revision: rev(n),
  });
  t.equal(ledger.submit(tx(updV('review', false, 2)), BUYER_A), 'Version d1 must be a draft to be in state review');
  t.equal(ledger.submit(tx(updV('review', true, 2)), BUYER_A), undefined, 'draft → review');
  t.equal(
    ledger.submit(tx(updV('accepted', true, 3)), BUYER_A),
    `Agent ${BUYER_A} does not have the correct permissions for organization acme to update purchase order version d1 of PO-S to a status of accepted`,
  );
  t.equal(ledger.submit(tx(updV('composed', true, 3)), BUYER_A), undefined, 'review → composed');
  po = decodePo(ledger, 'PO-S');
  const d1 = (po.versions as Array<Record<string, unknown>>)[0] as Record<string, unknown>;
  t.equal(d1.workflowState, 'composed');
  t.same(
    (d1.revisions as Array<{ revisionId: number }>).map((r) => r.revisionId),
    [1, 2, 3],
  );
  // A proposed version from the buyer; the seller accepts it while confirming the order.
  t.equal(
    ledger.submit(tx({ action: 'create_version', po_uid: 'PO-S', version_id: 'p1', revision: { ...rev(4), revision_number: 1 } }), BUYER_A),
    undefined,
  );
  t.equal(
    ledger.submit(tx({ action: 'update_po', po_uid: 'PO-S', workflow_state: 'issued', is_closed: true }), BUYER_A),
    'Purchase order PO-S cannot be closed in state issued',
  );
  t.equal(ledger.submit(tx({ action: 'create_version', po_uid: 'PO-S', version_id: 'd2', is_draft: true, revision: rev(5) }), BUYER_A), undefined);
  t.equal(
    ledger.submit(
      tx({
        action: 'update_po',
        po_uid: 'PO-S',
        workflow_state: 'issued',
        version_updates: [{ version_id: 'd2', workflow_state: 'review', revision: rev(5) }],
      }),
      BUYER_A,
    ),
    'Version d2 must be a draft to be in state review',
  );
  t.equal(
    ledger.submit(tx({ action: 'update_po', po_uid: 'PO-S', workflow_state: 'confirmed', accepted_version_number: 'p1' }), SELLER_B),
    'Version p1 must be in an accepted state to be the accepted version of purchase order PO-S',
  );
  const confirm = (isDraft: boolean): GridActionInput => ({
    action: 'update_po',
    po_uid: 'PO-S',
    workflow_state: 'confirmed',
    accepted_version_number: 'p1',
    version_updates: [{ version_id: 'p1', workflow_state: 'accepted', is_draft: isDraft, revision: { ...rev(4), revision_number: 1 } }],
  });
  t.equal(ledger.submit(tx(confirm(true)), SELLER_B), 'Draft version p1 cannot be the accepted version of purchase order PO-S');
  t.equal(ledger.submit(tx(confirm(false)), SELLER_B), undefined, 'seller confirms and accepts');
  t.equal(decodePo(ledger, 'PO-S').workflowState, 'confirmed');
  t.equal(
    ledger.submit(
      tx({
        action: 'update_po',
        po_uid: 'PO-S',
        workflow_state: 'issued',
        version_updates: [{ version_id: 'p1', workflow_state: 'obsolete', revision: rev(4) }],
      }),
      SELLER_B,
    ),
    `Agent ${SELLER_B} does not have the correct permissions for organization beta to update purchase order PO-S to a status of issued`,
  );
});

t.test('Sabre-wrapped transactions produce the same state as plain ones', async (t) => {
  const steps = [...setupSteps(), ...flowSteps(), closeStep()];
  const plain = new MemoryLedger(gridFamilies);
  const sabre = new MemoryLedger(gridFamilies);
  runAll(t, plain, steps, 'plain');
  runAll(t, sabre, steps, 'sabre');
  t.ok(plain.state.size > 10, `${plain.state.size} state entries`);
  t.same([...sabre.state.keys()].sort(), [...plain.state.keys()].sort(), 'same addresses');
  for (const [a, v] of plain.state) t.same(Buffer.from(sabre.state.get(a) ?? []), Buffer.from(v), `same bytes at ${a}`);

  const wrapped = wrapInSabre(buildGridTransaction({ action: 'create_organization', org_id: 'z', name: 'Z' }, { timestamp: TS }));
  t.equal(wrapped.familyName, 'sabre');
  t.equal(wrapped.familyVersion, '0.5');
  t.equal(wrapped.inputs.length, 4);
  t.match(wrapped.inputs[0], /^00ec01[0-9a-f]{64}$/);
  t.match(wrapped.inputs[1], /^00ec02[0-9a-f]{64}$/);
  t.match(wrapped.inputs[2], /^00ec00[0-9a-f]{64}$/);
  t.equal(wrapped.inputs[3], '621dee05');

  // Unknown contracts, other Sabre actions and undeclared prefixes are refused.
  const execute = (name: string, version: string, inputs: string[], outputs: string[], payload: Uint8Array): BuiltTransaction => ({
    familyName: 'sabre',
    familyVersion: '0.5',
    inputs: ['00ec', '621dee'],
    outputs: ['00ec', '621dee'],
    payload: encodeMsg(G.SabrePayload, { action: 3, executeContract: { name, version, inputs, outputs, payload } }),
  });
  const orgPayload = buildGridTransaction({ action: 'create_organization', org_id: 'z', name: 'Z' }).payload;
  const l = new MemoryLedger(gridFamilies);
  t.equal(
    l.submit(execute('intkey_multiply', '1.0', ['621dee05'], ['621dee05'], orgPayload), ADMIN_A),
    'Contract does not exist: intkey_multiply, 1.0',
  );
  t.equal(l.submit(execute('grid_pike', '9', ['621dee05'], ['621dee05'], orgPayload), ADMIN_A), 'Contract does not exist: grid_pike, 9');
  t.equal(l.submit(execute('grid_pike', '2', ['621de'], ['621dee05'], orgPayload), ADMIN_A), 'Input must be at least 6 characters long: 621de');
  t.equal(l.submit(execute('grid_pike', '2', ['621dee05'], ['6x1dee'], orgPayload), ADMIN_A), 'Output must be at least 6 characters long: 6x1dee');
  t.match(
    l.submit(execute('grid_pike', '2', ['621dee0501'], ['621dee05'], orgPayload), ADMIN_A),
    /^Contract grid_pike read 621dee0502[0-9a-f]+, which is not among its inputs$/,
  );
  t.match(
    l.submit(execute('grid_pike', '2', ['621dee05'], ['621dee0501'], orgPayload), ADMIN_A),
    /^Contract grid_pike wrote 621dee0502[0-9a-f]+, which is not among its outputs$/,
  );
  t.equal(l.state.size, 0, 'nothing written by refused transactions');
  const registry = { ...execute('x', '1', [], [], new Uint8Array()), payload: encodeMsg(G.SabrePayload, { action: 4 }) };
  t.equal(l.submit(registry, ADMIN_A), 'Sabre action CREATE_CONTRACT_REGISTRY is not supported');
  t.equal(l.submit({ ...registry, payload: encodeMsg(G.SabrePayload, { action: 3 }) }, ADMIN_A), 'Sabre payload has no execute_contract action');
  const seen: number[] = [];
  const withFallback = new MemoryLedger([createSabreFamily(GRID_CONTRACTS, (action) => void seen.push(action))]);
  t.equal(withFallback.submit(registry, ADMIN_A), undefined);
  t.same(seen, [4], 'other Sabre actions go to the fallback');

  t.same(decodeExecuteContract(wrapped.payload)?.name, 'grid_pike');
  t.equal(decodeExecuteContract(registry.payload), undefined);

  // Deleting through Sabre: a role is removed via the restricted context's delete.
  runAll(
    t,
    l,
    [
      [ADMIN_A, { action: 'create_organization', org_id: 'acme', name: 'Acme' }],
      [ADMIN_A, { action: 'create_role', org_id: 'acme', name: 'tmp' }],
    ],
    'sabre',
  );
  t.equal(l.submit(tx({ action: 'delete_role', org_id: 'acme', name: 'tmp' }, 'sabre'), ADMIN_A), undefined);
  t.notOk(l.state.has(roleAddress('acme', 'tmp')));
  // The engine's own input check still applies underneath.
  const narrow = { ...tx({ action: 'create_role', org_id: 'acme', name: 'tmp2' }, 'sabre'), inputs: ['00ec'] };
  t.match(l.submit(narrow, ADMIN_A), /^address not in inputs/);
});

t.test('read-model projection', async (t) => {
  const ledger = freshLedger(t);
  runAll(t, ledger, flowSteps());
  const rm = new MemoryReadModel();
  ledger.project(rm, { blockNum: 3, blockId: 'b3', timestamp: TS + 100 });

  t.same(rm.get(GRID_DB.organization, 'acme'), {
    id: 'acme',
    name: 'Acme Corp',
    alternate_ids: [`gs1_company_prefix:${PREFIX_A}`],
    locations: [],
    metadata: [{ country: 'US' }, { tier: 'gold' }],
    last_updated: TS + 100,
  });
  t.same(rm.keys(GRID_DB.organization), ['acme', 'beta']);
  t.same(rm.get(GRID_DB.agent, gridKeys.agent('acme', CLERK_A)), {
    public_key: CLERK_A,
    org_id: 'acme',
    active: true,
    roles: ['catalog'],
    metadata: { email: 'c@acme' },
    last_updated: TS + 100,
  });
  t.same(rm.get(GRID_DB.agentByKey, SELLER_B), { key: gridKeys.agent('beta', SELLER_B) });
  t.equal(rm.keys(GRID_DB.agent).filter((k) => k.startsWith(`acme${KEY_SEP}`)).length, 4, 'acme agents listed together');
  t.same(rm.get(GRID_DB.role, agentRoleKey('beta', 'po_partner')), {
    name: 'po_partner',
    org_id: 'beta',
    description: '',
    active: true,
    permissions: ['po::partner'],
    allowed_organizations: [],
    inherit_from: [],
    last_updated: TS + 100,
  });
  t.equal(agentRoleKey('acme', 'beta.po_partner'), gridKeys.role('beta', 'po_partner'));
  t.same(rm.get(GRID_DB.alternateId, gridKeys.alternateId('gs1_company_prefix', PREFIX_A)), {
    id_type: 'gs1_company_prefix',
    id: PREFIX_A,
    org_id: 'acme',
  });
  const schema = rm.get(GRID_DB.schema, 'gs1_location') as { properties: Array<Record<string, unknown>> };
  t.same(schema.properties[1], {
    name: 'locationType',
    data_type: 'ENUM',
    description: '',
    required: true,
    number_exponent: 0,
    enum_options: ['ShipTo', 'BillTo', 'ShipFrom'],
    struct_properties: [],
  });
  t.same(rm.get(GRID_DB.product, GTIN14), {
    product_id: GTIN14,
    product_address: productAddress(GTIN14),
    product_namespace: 'GS1',
    owner: 'acme',
    properties: [{ name: 'GDSN_3_1', data_type: 'STRING', value: '<tradeItem/>' }],
    last_updated: TS + 100,
  });
  const loc = rm.get(GRID_DB.location, GLN) as { properties: unknown[]; location_namespace: string };
  t.equal(loc.location_namespace, 'GS1');
  t.same(loc.properties, [
    { name: 'locationDescription', data_type: 'STRING', value: 'Main warehouse' },
    { name: 'locationType', data_type: 'ENUM', value: 2 },
    { name: 'addressLine1', data_type: 'STRING', value: '1 Main St' },
    { name: 'latLong', data_type: 'LAT_LONG', value: { latitude: 44_977_753, longitude: -93_265_015 } },
    { name: 'open', data_type: 'BOOLEAN', value: true },
    { name: 'docks', data_type: 'NUMBER', value: 12 },
    { name: 'photo', data_type: 'BYTES', value: Buffer.from('jpg').toString('base64') },
    { name: 'contact', data_type: 'STRUCT', value: [{ name: 'person', data_type: 'STRING', value: 'Ann' }] },
  ]);
  const version = { version_id: 'v1', workflow_state: 'accepted', is_draft: false, current_revision_number: 3, revisions: [1, 2, 3] };
  t.same(rm.get(GRID_DB.purchaseOrder, 'PO-00001'), {
    uid: 'PO-00001',
    workflow_state: 'confirmed',
    buyer_org_id: 'acme',
    seller_org_id: 'beta',
    is_closed: false,
    accepted_version_number: 'v1',
    alternate_ids: [{ id_type: 'po_number', id: '4500001', po_uid: 'PO-00001' }],
    versions: [version],
    created_at: TS,
    workflow_id: 'built-in::collaborative::v1',
  });
  t.same(rm.get(GRID_DB.poVersion, gridKeys.poVersion('PO-00001', 'v1')), version);
  t.same(
    rm.keys(GRID_DB.poRevision),
    [1, 2, 3].map((n) => gridKeys.poRevision('PO-00001', 'v1', n)),
  );
  t.same(rm.get(GRID_DB.poRevision, gridKeys.poRevision('PO-00001', 'v1', 3)), {
    revision_number: 3,
    submitter: SELLER_B,
    created_at: TS + 7,
    order_xml_v3_4: XML(7),
  });
  t.same(rm.keys(GRID_DB.poAlternateId), [gridKeys.poAlternateId('po_number', '4500001', 'PO-00001')]);

  // A later block: unchanged records keep their timestamp, changed ones get the new one,
  // and records that disappear from state disappear from the read model.
  const [closer, close] = closeStep();
  t.equal(ledger.submit(tx(close), closer), undefined);
  t.equal(ledger.submit(tx({ action: 'delete_product', product_id: GTIN14 }), CLERK_A), undefined);
  t.equal(ledger.submit(tx({ action: 'update_organization', org_id: 'acme', name: 'Acme Corp' }), ADMIN_A), undefined);
  t.equal(ledger.submit(tx({ action: 'update_organization', org_id: 'beta', name: 'Beta Group' }), ADMIN_B), undefined);
  ledger.project(rm, { blockNum: 4, blockId: 'b4', timestamp: TS + 200 });
  t.equal(rm.get(GRID_DB.product, GTIN14), undefined, 'deleted product removed');
  t.equal(rm.get(GRID_DB.address, productAddress(GTIN14)), undefined, 'bookkeeping removed');
  t.equal((rm.get(GRID_DB.organization, 'acme') as { last_updated: number }).last_updated, TS + 100, 'unchanged record keeps last_updated');
  t.same(rm.get(GRID_DB.organization, 'beta'), {
    id: 'beta',
    name: 'Beta Group',
    alternate_ids: ['gs1_company_prefix:0012345'],
    locations: [],
    metadata: [],
    last_updated: TS + 200,
  });
  const closed = rm.get(GRID_DB.purchaseOrder, 'PO-00001') as Record<string, unknown>;
  t.equal(closed.workflow_state, 'closed');
  t.notOk('accepted_version_number' in closed, 'no accepted version');
  t.same(rm.keys(GRID_DB.poAlternateId), [], 'PO alternate id cleared');
  t.equal((rm.get(GRID_DB.poVersion, gridKeys.poVersion('PO-00001', 'v1')) as { workflow_state: string }).workflow_state, 'obsolete');

  // Undecodable values and addresses outside the record kinds project to nothing.
  gridProjector.project(productAddress(GTIN13), Uint8Array.of(0xff, 0xff, 0xff), rm, { blockNum: 5, blockId: 'b5', timestamp: 1 });
  t.equal(rm.get(GRID_DB.address, productAddress(GTIN13)), undefined);
  t.same(gridRecords(`621dee03${'0'.repeat(62)}`, Uint8Array.of(), 1), []);
  t.equal(safeKey('short'), 'short');
  const long = 'x'.repeat(3000);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  t.match(safeKey(long), /^x{256}\u0002[0-9a-f]{64}$/, 'long ids are shortened with a hash');
  t.not(safeKey(long), safeKey(`${long}y`));
  // Lossy-free 64-bit numbers and unset data types.
  const big = encodeMsg(G.ProductList, {
    entries: [
      { productId: '1', productNamespace: 1, owner: 'o', properties: [{ name: 'n', dataType: 3, numberValue: '9007199254740993' }, { name: 'u' }] },
    ],
  });
  const rows = gridRecords(productAddress('1'), big, 5);
  t.same((rows[0]?.[2] as { properties: unknown[] } | undefined)?.properties, [
    { name: 'n', data_type: 'NUMBER', value: '9007199254740993' },
    { name: 'u', data_type: 'UNSET_DATA_TYPE', value: null },
  ]);
});

t.test('build helpers', async (t) => {
  t.ok(GRID_ACTIONS.includes('create_po'));
  const org = buildGridTransaction({ action: 'create_organization', org_id: 'o', name: 'O' }, { timestamp: TS });
  t.same([org.familyName, org.familyVersion, org.inputs, org.outputs], ['grid_pike', '2', ['621dee05'], ['621dee05']]);
  t.same(G.PikePayload.toObject(G.PikePayload.decode(org.payload), { longs: Number }), {
    action: 3,
    createOrganization: { id: 'o', name: 'O' },
    timestamp: TS,
  });
  const io = (a: GridActionInput): [string[], string[]] => {
    const b = buildGridTransaction(a);
    return [b.inputs, b.outputs];
  };
  t.same(io({ action: 'create_schema', name: 's', properties: [{ name: 'p', data_type: 'STRING' }] }), [['621dee05', '621dee01'], ['621dee01']]);
  t.same(io({ action: 'delete_product', product_id: GTIN14 }), [['621dee05', '621dee01', '621dee02'], ['621dee02']]);
  t.same(io({ action: 'delete_location', location_id: GLN }), [['621dee01', '621dee05', '621dee04'], ['621dee04']]);
  t.same(io({ action: 'update_version', po_uid: 'p', version_id: 'v', workflow_state: 's', revision: { submitter: 'k', order_xml_v3_4: 'x' } }), [
    ['621dee06', '621dee05'],
    ['621dee06'],
  ]);

  t.same(metadataEntries({ a: 'b' }), [{ key: 'a', value: 'b' }]);
  t.same(metadataEntries([{ key: 'k', value: 'v' }, { x: 'y' }]), [
    { key: 'k', value: 'v' },
    { key: 'x', value: 'y' },
  ]);
  t.same(alternateIds(['t:a:b', { id_type: 'u', id: 'c' }]), [
    { idType: 't', id: 'a:b' },
    { idType: 'u', id: 'c' },
  ]);
  t.equal(dataTypeValue('LatLong'), 7);
  t.equal(dataTypeValue('LOCATION'), 7);
  t.equal(dataTypeValue(4), 4);
  t.same(propertyValue({ name: 'n', data_type: 'Number', number_value: 5 }), { name: 'n', dataType: 3, numberValue: 5 });
  t.same(propertyValue({ name: 'b', data_type: 'bytes', value: [1, 2] }), { name: 'b', dataType: 1, bytesValue: Uint8Array.of(1, 2) });

  const bad: Array<[unknown, RegExp]> = [
    [{ action: 'launch' }, /^unknown action: launch$/],
    [{}, /^`action` is required$/],
    [{ action: 'create_organization', name: 'x' }, /^`id` is required$/],
    [{ action: 'create_organization', org_id: 5, name: 'x' }, /^`org_id` must be a string$/],
    [{ action: 'create_organization', org_id: '', name: 'x' }, /^`org_id` must not be empty$/],
    [{ action: 'create_agent', org_id: 'o', public_key: 'k', active: 'yes' }, /^`active` must be a boolean$/],
    [{ action: 'create_agent', org_id: 'o', public_key: 'k', roles: [1] }, /^`roles` must be an array of strings$/],
    [{ action: 'create_agent', org_id: 'o', public_key: 'k', metadata: [{ a: 1 }] }, /^metadata value of `a` must be a string$/],
    [{ action: 'create_agent', org_id: 'o', public_key: 'k', metadata: [{ a: '1', b: '2' }] }, /^metadata entries must be/],
    [{ action: 'create_agent', org_id: 'o', public_key: 'k', metadata: ['x'] }, /^metadata entries must be objects$/],
    [{ action: 'create_agent', org_id: 'o', public_key: 'k', metadata: 'x' }, /^metadata must be an array or an object$/],
    [{ action: 'create_organization', org_id: 'o', name: 'x', alternate_ids: ['nocolon'] }, /^alternate id must look like/],
    [{ action: 'create_organization', org_id: 'o', name: 'x', alternate_ids: 'x' }, /^`alternate_ids` must be an array$/],
    [{ action: 'create_organization', org_id: 'o', name: 'x', alternate_ids: [3] }, /^alternate ids must be strings or objects$/],
    [{ action: 'create_schema', name: 's', properties: [] }, /^`properties` must not be empty$/],
    [{ action: 'create_schema', name: 's', properties: 'p' }, /^`properties` must be an array$/],
    [{ action: 'create_schema', name: 's', properties: [1] }, /^property definitions must be objects$/],
    [{ action: 'create_schema', name: 's', properties: [{ name: 'p', data_type: 'COLOR' }] }, /^unknown data_type: COLOR$/],
    [{ action: 'create_schema', name: 's', properties: [{ name: 'p', data_type: 'ENUM' }] }, /^'enum_options' cannot be empty$/],
    [{ action: 'create_schema', name: 's', properties: [{ name: 'p', data_type: 'STRUCT' }] }, /^'struct_properties' cannot be empty$/],
    [
      { action: 'create_schema', name: 's', properties: [{ name: 'p', data_type: 'NUMBER', number_exponent: 0.5 }] },
      /^`number_exponent` must be an integer$/,
    ],
    [{ action: 'create_product', product_id: '1', owner: 'o', product_namespace: 'EAN' }, /^`product_namespace` must be GS1$/],
    [{ action: 'create_product', product_id: '1', owner: 'o', timestamp: -1 }, /^`timestamp` must be a non-negative integer$/],
    [{ action: 'create_product', product_id: '1', owner: 'o', properties: [3] }, /^properties must be objects$/],
    [{ action: 'create_product', product_id: '1', owner: 'o', properties: [{ name: 'p', data_type: 'STRING' }] }, /^property p has no value$/],
    [
      { action: 'create_product', product_id: '1', owner: 'o', properties: [{ name: 'p', data_type: 'STRING', value: 1 }] },
      /^property p must be a string$/,
    ],
    [
      { action: 'create_product', product_id: '1', owner: 'o', properties: [{ name: 'p', data_type: 'BOOLEAN', value: 1 }] },
      /^property p must be a boolean$/,
    ],
    [
      { action: 'create_product', product_id: '1', owner: 'o', properties: [{ name: 'p', data_type: 'NUMBER', value: 1.5 }] },
      /^property p must be an integer$/,
    ],
    [
      { action: 'create_product', product_id: '1', owner: 'o', properties: [{ name: 'p', data_type: 'ENUM', value: -1 }] },
      /^property p must be an enum index$/,
    ],
    [
      { action: 'create_product', product_id: '1', owner: 'o', properties: [{ name: 'p', data_type: 'STRUCT', value: {} }] },
      /^property p must be an array of properties$/,
    ],
    [
      { action: 'create_product', product_id: '1', owner: 'o', properties: [{ name: 'p', data_type: 'LAT_LONG', value: 1 }] },
      /^property p must be \{latitude, longitude\}$/,
    ],
    [{ action: 'create_product', product_id: '1', owner: 'o', properties: [{ name: 'p', data_type: 'BYTES', value: 1 }] }, /^bytes values must be/],
    [
      { action: 'create_po', uid: 'u', buyer_org_id: 'b', seller_org_id: 's', create_version_payload: 'x' },
      /^`create_version_payload` must be an object$/,
    ],
    [{ action: 'create_version', po_uid: 'u', version_id: 'v' }, /^`revision` is required$/],
    [{ action: 'create_version', po_uid: 'u', version_id: 'v', revision: { order_xml_v3_4: 'x' } }, /^`submitter` is required$/],
    [{ action: 'update_po', po_uid: 'u', workflow_state: 's', version_updates: [1] }, /^version updates must be objects$/],
  ];
  for (const [action, message] of bad) {
    t.throws(() => buildGridTransaction(action as GridActionInput), message, String(message));
    try {
      buildGridTransaction(action as GridActionInput);
    } catch (err) {
      t.ok(err instanceof GridBuildError, 'GridBuildError');
    }
  }
  // Large NUMBER values travel as decimal strings; bigint works too.
  const big = buildGridTransaction({ action: 'update_product', product_id: '1', properties: [{ name: 'n', data_type: 'NUMBER', value: 2n ** 60n }] });
  const decoded = G.ProductPayload.toObject(G.ProductPayload.decode(big.payload), { longs: String });
  t.equal((decoded.productUpdate as { properties: Array<{ numberValue: string }> }).properties[0]?.numberValue, String(2n ** 60n));
  const loc = buildGridTransaction({ action: 'update_location', location_namespace: 'GS1', location_id: GLN, properties: [] });
  t.equal(loc.familyName, 'grid_location');
});
