/**
 * Within one round the state service serves the same bytes object for an address and Sabre
 * keeps the namespace registries it decoded by those bytes: a registry changed earlier in the
 * same round must be seen by the contract transactions after it (never a kept, older decode).
 */
import t from 'tap';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { Batch, decode } from '../src/proto/index.js';
import { buildBatch } from '../src/ledger/build.js';
import { BlockExecutor } from '../src/ledger/executor.js';
import { intkeyAddress, intkeyPayload } from '../src/families/intkey.js';
import { ADMIN_SETTING_ADDRESS, adminSettingValue, scabbardFamilies } from '../src/scabbard/sabre.js';
import { createNamespaceRegistryTxn, executeContractTxn, namespacePermissionTxn } from '../src/scabbard/payloads.js';

const admin = new Signer(randomPrivateKey());
const user = new Signer(randomPrivateKey());

function round(base: Map<string, Buffer>) {
  // One object per address, as the state service's round reads serve them.
  const exec = new BlockExecutor({ get: (a) => base.get(a) }, scabbardFamilies);
  const run = (signer: Signer, txn: ReturnType<typeof executeContractTxn>) => {
    const out = exec.executeBatch(decode(Batch, buildBatch(signer, [txn]).bytes), () => false);
    if (out === 'wait' || out === 'async' || 'unserved' in out) throw new Error(`unexpected outcome ${JSON.stringify(out)}`);
    return out.ok ? 'ok' : out.invalid.message;
  };
  const set = (name: string, v: number) => {
    const a = intkeyAddress(name);
    return run(user, executeContractTxn(user, 'intkey', '1.0', [a], [a], intkeyPayload('set', name, v)));
  };
  return { exec, run, set };
}

t.test('permission changes earlier in a round decide the contract transactions after them', async (t) => {
  const base = new Map<string, Buffer>([[ADMIN_SETTING_ADDRESS, Buffer.from(adminSettingValue([admin.publicKey]))]]);
  const r = round(base);
  t.equal(r.run(admin, createNamespaceRegistryTxn(admin, '1cf126', [admin.publicKey])), 'ok');
  t.match(r.set('a', 1), /^Contract does not have permission to read from state : intkey 1cf126/, 'no permission yet');
  t.match(r.set('a', 1), /permission to read from state/, 'still none (kept decode of the same bytes)');
  t.equal(r.run(admin, namespacePermissionTxn(admin, '1cf126', 'intkey', true, true)), 'ok');
  t.equal(r.set('b', 2), 'ok', 'the permission written in this round is seen');
  t.equal(r.set('c', 3), 'ok');
  t.equal(r.run(admin, namespacePermissionTxn(admin, '1cf126', 'intkey', true, false)), 'ok');
  t.match(r.set('d', 4), /permission to write to state/, 'the write permission taken back in this round is seen');

  // The next round, on the state the first one left: many reads of the same registry bytes.
  const next = new Map(base);
  for (const [a, v] of r.exec.writes) if (v) next.set(a, Buffer.from(v));
  const r2 = round(next);
  t.match(r2.set('e', 5), /permission to write to state/);
  t.equal(r2.run(admin, namespacePermissionTxn(admin, '1cf126', 'intkey', true, true)), 'ok');
  for (let i = 0; i < 20; i++) t.equal(r2.set(`f${i}`, i), 'ok');
});
