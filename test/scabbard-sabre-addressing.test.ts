/**
 * Sabre's namespace registries addressed as upstream's SDK and handler do: a registry lives
 * at 00ec00 + sha512(first six characters of its namespace)[..64], so `621dee` and
 * `621dee05` share one address; at execution each input and output is governed by the
 * last registry in that list whose namespace is a prefix of it, with upstream's messages.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { Batch, decode } from '../src/proto/index.js';
import { buildBatch } from '../src/ledger/build.js';
import { BlockExecutor } from '../src/ledger/executor.js';
import { intkeyAddress, intkeyPayload } from '../src/families/intkey.js';
import {
  ADMIN_SETTING_ADDRESS,
  adminSettingValue,
  contractAddress,
  contractRegistryAddress,
  namespaceRegistryAddress,
  scabbardFamilies,
} from '../src/scabbard/sabre.js';
import { createNamespaceRegistryTxn, executeContractTxn, namespacePermissionTxn, sabreTxn } from '../src/scabbard/payloads.js';
import { SabreAct, NamespaceRegistryList } from '../src/scabbard/proto.js';

const sha512 = (s: string): string => createHash('sha512').update(s).digest('hex');

t.test('registry addresses computed the upstream way', async (t) => {
  // compute_namespace_registry_address: the first six characters only.
  t.equal(namespaceRegistryAddress('621dee05'), `00ec00${sha512('621dee').slice(0, 64)}`);
  t.equal(namespaceRegistryAddress('621dee05'), namespaceRegistryAddress('621dee'), 'an 8-character namespace shares its 6-character address');
  t.equal(namespaceRegistryAddress('621dee0501'), namespaceRegistryAddress('621dee02'));
  t.not(namespaceRegistryAddress('621def'), namespaceRegistryAddress('621dee'));
  // compute_contract_registry_address / compute_contract_address: the whole name (and "name,version").
  t.equal(contractRegistryAddress('grid_product'), `00ec01${sha512('grid_product').slice(0, 64)}`);
  t.equal(contractAddress('grid_product', '1'), `00ec02${sha512('grid_product,1').slice(0, 64)}`);
  // The example of upstream's Sabre specification (docs/source/sabre_transaction_family.rst).
  t.equal(contractAddress('example', '1.0'), '00ec0248a8e00e3fbca83815668ec5eee730023e6eb61b03b54e8cae1729bf5a0bec64');
  // The setting address upstream's SDK hard-codes (ADMINISTRATORS_SETTING_ADDRESS).
  t.equal(ADMIN_SETTING_ADDRESS, '000000a87cb5eafdcca6a814e4add97c4b517d3c530c2f44b31d18e3b0c44298fc1c14');
});

t.test('an 8-character namespace registry governs the inputs it prefixes; the longest match decides', async (t) => {
  const admin = new Signer(randomPrivateKey());
  const state = new Map<string, Buffer>([[ADMIN_SETTING_ADDRESS, Buffer.from(adminSettingValue([admin.publicKey]))]]);
  const exec = new BlockExecutor({ get: (a) => state.get(a) }, scabbardFamilies);
  const run = (txn: ReturnType<typeof executeContractTxn>): string => {
    const out = exec.executeBatch(decode(Batch, buildBatch(admin, [txn]).bytes), () => false);
    if (out === 'wait' || out === 'async' || 'unserved' in out) throw new Error(`unexpected outcome ${JSON.stringify(out)}`);
    return out.ok ? 'ok' : out.invalid.message;
  };
  const done = new Set<string>();
  /** intkey `set` the first time, `inc` afterwards (a second `set` of a name is invalid in intkey). */
  const set = (name: string): string => {
    const a = intkeyAddress(name);
    const r = run(executeContractTxn(admin, 'intkey', '1.0', [a], [a], intkeyPayload(done.has(name) ? 'inc' : 'set', name, 1)));
    if (r === 'ok') done.add(name);
    return r;
  };
  const a = intkeyAddress('a');
  const b = intkeyAddress('b');
  const ns8 = a.slice(0, 8);
  t.not(b.slice(0, 8), ns8, 'b is outside the 8-character namespace');

  t.equal(set('a'), 'Namespace Registry does not exist: 1cf126', 'no registry at the address');
  // The registry transaction declares only the 6-character address, as an upstream client does.
  t.equal(run(createNamespaceRegistryTxn(admin, ns8, [admin.publicKey])), 'ok', 'created at the address of its first six characters');
  t.equal(run(namespacePermissionTxn(admin, ns8, 'intkey', true, true)), 'ok');
  const stored = exec.writes.get(namespaceRegistryAddress('1cf126'));
  t.ok(stored, 'stored at the 6-character address');
  t.same(
    (decode(NamespaceRegistryList, stored as Uint8Array) as unknown as { registries: Array<{ namespace: string }> }).registries.map(
      (r) => r.namespace,
    ),
    [ns8],
  );
  t.equal(set('a'), 'ok', 'an input under the 8-character namespace runs');
  t.equal(set('b'), `No namespace registry exists for namespace: 1cf126 input: ${b}`);

  // A 6-character registry beside it, read-only: it governs b; a stays under the longer one.
  t.equal(run(createNamespaceRegistryTxn(admin, '1cf126', [admin.publicKey])), 'ok');
  t.equal(run(namespacePermissionTxn(admin, '1cf126', 'intkey', true, false)), 'ok');
  t.equal(set('b'), `Contract does not have permission to write to state: intkey, ${b}`);
  t.equal(set('a'), 'ok', 'the longest prefix (last in the sorted list) decides');
  t.equal(run(namespacePermissionTxn(admin, '1cf126', 'intkey', false, true)), 'ok');
  t.equal(set('b'), `Contract does not have permission to read from state : intkey ${b}`);

  // Deleting a registry removes the whole entry at its address, as upstream's state does.
  t.equal(run(createNamespaceRegistryTxn(admin, '621dee', [admin.publicKey])), 'ok');
  t.equal(run(createNamespaceRegistryTxn(admin, '621dee05', [admin.publicKey])), 'ok');
  const shared = namespaceRegistryAddress('621dee');
  t.equal((decode(NamespaceRegistryList, exec.writes.get(shared) as Uint8Array) as unknown as { registries: unknown[] }).registries.length, 2);
  const del = sabreTxn(
    admin,
    { action: SabreAct.DELETE_NAMESPACE_REGISTRY, deleteNamespaceRegistry: { namespace: '621dee05' } },
    [shared, ADMIN_SETTING_ADDRESS],
    [shared, ADMIN_SETTING_ADDRESS],
  );
  t.equal(run(del), 'ok');
  t.ok(exec.writes.has(shared) && !exec.writes.get(shared), 'the entry is deleted, 621dee with it');

  // Short namespaces and inputs are refused with upstream's words.
  t.equal(run(createNamespaceRegistryTxn(admin, '1cf12', [admin.publicKey])), 'Namespace must be at least 6 characters: 1cf12');
  const short = sabreTxn(
    admin,
    { action: SabreAct.DELETE_NAMESPACE_REGISTRY, deleteNamespaceRegistry: { namespace: '1cf' } },
    [ADMIN_SETTING_ADDRESS],
    [ADMIN_SETTING_ADDRESS],
  );
  t.equal(run(short), 'Namespace must be at least 6 characters long: 1cf');
  t.equal(
    run(executeContractTxn(admin, 'intkey', '1.0', ['1cf1'], [a], intkeyPayload('set', 'a', 1))),
    'Input must have at least 6 characters: 1cf1',
  );
  t.equal(
    run(executeContractTxn(admin, 'intkey', '1.0', [a], ['1cf1'], intkeyPayload('set', 'a', 1))),
    'Output must have at least 6 characters: 1cf1',
  );
});
