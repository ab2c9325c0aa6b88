/**
 * The settings family: proposals by authorized keys over real HTTP (readable from state
 * afterwards), refusals for other keys, and the voting rules with an in-memory context.
 */
import t from 'tap';
import { join } from 'node:path';
import { startTestNode } from './helpers/node.js';
import { newSigner, batchList, postBatches, getJson, waitCommitted, buildBatch, buildTransaction } from './helpers/batches.js';
import { loadOrCreateKey } from '../src/store/keys.js';
import { applySettings, proposalPayload, votePayload, settingAddress, settingsTxnAddresses, readSetting } from '../src/families/settings.js';
import { InvalidTransaction, type TxnContext, type TxnInfo } from '../src/families/types.js';
import { Setting, SettingProposal, decode, encode } from '../src/proto/index.js';
import { sha256Hex } from '../src/families/address.js';
import type { Signer } from '../src/crypto/secp256k1.js';

function proposal(signer: Signer, key: string, value: string): ReturnType<typeof buildBatch> {
  return buildBatch(signer, [
    buildTransaction(signer, {
      familyName: 'sawtooth_settings',
      familyVersion: '1.0',
      ...settingsTxnAddresses(key),
      payload: proposalPayload(key, value, 'n1'),
    }),
  ]);
}

t.test('authorized proposals apply; others are refused', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  const nodeKey = loadOrCreateKey(join(n.dataDir, 'keys', 'validator.priv'));
  const stranger = newSigner();
  const ok = proposal(nodeKey, 'cairn.test.color', 'blue');
  const refused = proposal(stranger, 'cairn.test.color', 'red');
  t.equal((await postBatches(n.ledgerUrl, batchList(ok))).status, 202);
  t.equal((await postBatches(n.ledgerUrl, batchList(refused))).status, 202);
  const [a, b] = await waitCommitted(n.ledgerUrl, [ok.id, refused.id]);
  t.equal(a.status, 'COMMITTED');
  t.equal(b.status, 'INVALID');
  t.match(b.invalid_transactions[0].message, /is not authorized to change settings/);
  const st = await getJson(`${n.ledgerUrl}/state/${settingAddress('cairn.test.color')}`);
  const entries = decode(Setting, Buffer.from(st.json.data, 'base64')).entries;
  t.same(
    entries.map((e) => [e.key, e.value]),
    [['cairn.test.color', 'blue']],
  );
  // The genesis block made the node's key the authorized one.
  const auth = await getJson(`${n.ledgerUrl}/state/${settingAddress('sawtooth.settings.vote.authorized_keys')}`);
  t.match(Buffer.from(auth.json.data, 'base64').toString(), nodeKey.publicKey);
  // The receipt carries the settings/update event.
  const r = await getJson(`${n.ledgerUrl}/receipts?id=${ok.txnIds[0]}`);
  t.same(r.json.data[0].events, [{ attributes: [{ key: 'updated', value: 'cairn.test.color' }], event_type: 'settings/update' }]);
});

/** An in-memory state context (no input/output checks: the engine does those). */
function memory(): { ctx: TxnContext; state: Map<string, Uint8Array>; events: string[] } {
  const state = new Map<string, Uint8Array>();
  const events: string[] = [];
  const ctx: TxnContext = {
    get: (a) => state.get(a),
    set: (a, v) => void state.set(a, v),
    delete: (a) => void state.delete(a),
    addEvent: (type, attrs) => void events.push(`${type}:${attrs.map((x) => x.value).join(',')}`),
    addReceiptData: () => {},
  };
  return { ctx, state, events };
}

function txn(signer: string, payload: Uint8Array): TxnInfo {
  return {
    id: 'x',
    payload,
    header: {
      signerPublicKey: signer,
      batcherPublicKey: signer,
      dependencies: [],
      familyName: 'sawtooth_settings',
      familyVersion: '1.0',
      inputs: [],
      outputs: [],
      nonce: '',
      payloadSha512: '',
    },
  };
}

t.test('voting rules', async (t) => {
  const { ctx, state, events } = memory();
  const [k1, k2, k3] = [`02${'1'.repeat(64)}`, `02${'2'.repeat(64)}`, `02${'3'.repeat(64)}`];
  const apply = (signer: string, payload: Uint8Array): void => applySettings(txn(signer, payload), ctx);
  const read = (key: string): string | undefined => readSetting((a) => state.get(a), key);
  const fails = (fn: () => void, msg: RegExp, what: string): void => {
    t.throws(fn, { name: 'InvalidTransaction', message: msg }, what);
  };
  fails(() => apply(k1, proposalPayload('a.b', '1')), /until authorized_keys is set/, 'nothing before authorized_keys');
  fails(() => apply(k1, proposalPayload('sawtooth.settings.vote.authorized_keys', ' , ')), /must not be empty/, 'empty key list');
  apply(k1, proposalPayload('sawtooth.settings.vote.authorized_keys', `${k1},${k2},${k3}`));
  t.equal(read('sawtooth.settings.vote.authorized_keys'), `${k1},${k2},${k3}`);
  fails(() => apply(`02${'9'.repeat(64)}`, proposalPayload('a.b', '1')), /not authorized/, 'stranger');
  fails(() => apply(k1, proposalPayload('sawtooth.settings.vote.approval_threshold', '4')), /less than or equal/, 'threshold above keys');
  fails(() => apply(k1, proposalPayload('sawtooth.settings.vote.approval_threshold', 'x')), /positive integer/, 'threshold not a number');
  fails(() => apply(k1, proposalPayload('sawtooth.settings.vote.proposals', 'x')), /read-only/, 'proposals are read-only');
  fails(() => apply(k1, proposalPayload('', 'x')), /must not be empty/, 'empty key');
  apply(k1, proposalPayload('sawtooth.settings.vote.approval_threshold', '2'));
  t.equal(read('sawtooth.settings.vote.approval_threshold'), '2');

  // With threshold 2 a proposal waits for a second ACCEPT.
  const p = proposalPayload('a.b.c', 'v1', 'n');
  apply(k1, p);
  t.equal(read('a.b.c'), undefined, 'not applied yet');
  fails(() => apply(k1, p), /Duplicate proposal/, 'same proposal twice');
  const data = encode(SettingProposal, { setting: 'a.b.c', value: 'v1', nonce: 'n' });
  const id = sha256Hex(data);
  fails(() => apply(k1, votePayload(id, true)), /already voted/, 'proposer votes again');
  fails(() => apply(k2, votePayload('00', true)), /does not exist/, 'unknown proposal');
  apply(k2, votePayload(id, true));
  t.equal(read('a.b.c'), 'v1', 'applied at the threshold');

  // Two rejections drop a proposal.
  apply(k1, proposalPayload('a.b.d', 'v2', 'n'));
  const id2 = sha256Hex(encode(SettingProposal, { setting: 'a.b.d', value: 'v2', nonce: 'n' }));
  apply(k2, votePayload(id2, false));
  apply(k3, votePayload(id2, false));
  t.equal(read('a.b.d'), undefined, 'rejected');
  fails(() => apply(k2, votePayload(id2, true)), /does not exist/, 'dropped after rejection');
  fails(() => apply(k1, new Uint8Array([0x08, 0x05])), /must be one of/, 'unknown action');
  fails(() => apply(k1, new Uint8Array([0xff])), /Invalid settings payload/, 'garbage payload');
  t.ok(events.includes('settings/update:a.b.c'));
  t.ok(new InvalidTransaction('x') instanceof Error);
});
