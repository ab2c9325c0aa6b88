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
import { Setting, SettingProposal, SettingsPayload, SettingVote, decode, encode } from '../src/proto/index.js';
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
  t.equal(b.invalid_transactions[0].message, `"${stranger.publicKey}" is not authorized to change settings`, "the reference processor's words");
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
  fails(() => apply(k1, proposalPayload('a.b', '1')), /^Cannot set "a\.b" until authorized_keys is set\.$/, 'nothing before authorized_keys');
  fails(() => apply(k1, proposalPayload('sawtooth.settings.vote.authorized_keys', ' , ')), /^authorized_keys must not be empty\.$/, 'empty key list');
  apply(k1, proposalPayload('sawtooth.settings.vote.authorized_keys', `${k1},${k2},${k3}`));
  t.equal(read('sawtooth.settings.vote.authorized_keys'), `${k1},${k2},${k3}`);
  fails(
    () => apply(`02${'9'.repeat(64)}`, new Uint8Array([0xff])),
    /^"029{64}" is not authorized to change settings$/,
    'stranger, before the payload is read',
  );
  fails(
    () => apply(k1, proposalPayload('sawtooth.settings.vote.approval_threshold', '4')),
    /^approval_threshold must be less than or equal to number of authorized_keys$/,
    'threshold above keys',
  );
  for (const bad of ['x', '1.0', ' 1', '1e0', '0x1', '2147483648']) {
    fails(
      () => apply(k1, proposalPayload('sawtooth.settings.vote.approval_threshold', bad)),
      /^approval_threshold must be an integer$/,
      `threshold ${bad}`,
    );
  }
  fails(
    () => apply(k1, proposalPayload('sawtooth.settings.vote.proposals', 'x')),
    /^Setting sawtooth\.settings\.vote\.proposals is read-only$/,
    'read-only',
  );
  // As upstream: a threshold of 0 (or below) is accepted and means "no vote needed"; an empty key is a key.
  apply(k1, proposalPayload('sawtooth.settings.vote.approval_threshold', '0'));
  t.equal(read('sawtooth.settings.vote.approval_threshold'), '0');
  apply(k1, proposalPayload('x.y', 'applied at once'));
  t.equal(read('x.y'), 'applied at once', 'threshold 0: applied at once');
  apply(k1, proposalPayload('', 'x'));
  t.equal(read(''), 'x');
  apply(k1, proposalPayload('sawtooth.settings.vote.approval_threshold', '+1'));
  t.equal(read('sawtooth.settings.vote.approval_threshold'), '+1', 'a sign is allowed, as by Rust');
  apply(k1, proposalPayload('sawtooth.settings.vote.approval_threshold', '2'));
  t.equal(read('sawtooth.settings.vote.approval_threshold'), '2');

  // With threshold 2 a proposal waits for a second ACCEPT.
  const p = proposalPayload('a.b.c', 'v1', 'n');
  apply(k1, p);
  t.equal(read('a.b.c'), undefined, 'not applied yet');
  fails(() => apply(k1, p), /^Duplicate proposal for "a\.b\.c"$/, 'same proposal twice');
  const data = encode(SettingProposal, { setting: 'a.b.c', value: 'v1', nonce: 'n' });
  const id = sha256Hex(data);
  fails(() => apply(k1, votePayload(id, true)), new RegExp(`^"${k1}" already has voted$`), 'proposer votes again');
  fails(() => apply(k2, votePayload('00', true)), /^Proposal "00" does not exist$/, 'unknown proposal');
  fails(
    () => apply(k3, encode(SettingsPayload, { action: 2, data: encode(SettingVote, { proposalId: id, vote: 0 }) })),
    /^Transaction type unset$/,
    'vote unset',
  );
  apply(k2, votePayload(id, true));
  t.equal(read('a.b.c'), 'v1', 'applied at the threshold');

  // Two rejections drop a proposal.
  apply(k1, proposalPayload('a.b.d', 'v2', 'n'));
  const id2 = sha256Hex(encode(SettingProposal, { setting: 'a.b.d', value: 'v2', nonce: 'n' }));
  apply(k2, votePayload(id2, false));
  apply(k3, votePayload(id2, false));
  t.equal(read('a.b.d'), undefined, 'rejected');
  fails(() => apply(k2, votePayload(id2, true)), /does not exist/, 'dropped after rejection');
  fails(() => apply(k1, new Uint8Array([0x08, 0x05])), /^'action' must be one of \{PROPOSE, VOTE\} in 'Ballot' mode$/, 'unknown action');
  fails(() => apply(k1, new Uint8Array([0xff])), /^Failed to unmarshal SettingsTransaction$/, 'garbage payload');
  fails(() => apply(k1, encode(SettingsPayload, { action: 1, data: new Uint8Array([0xff]) })), /^Failed to unmarshal/, 'garbage proposal');

  // Entries sharing an address keep their order; a changed one stays where it stands.
  const fresh = memory();
  applySettings(txn(k1, proposalPayload('sawtooth.settings.vote.authorized_keys', k1)), fresh.ctx);
  const addr = settingAddress('a.b.c');
  const pair = [
    { key: 'z.z.z', value: '1' },
    { key: 'a.b.c', value: 'v1' },
  ];
  fresh.state.set(addr, encode(Setting, { entries: pair }));
  applySettings(txn(k1, proposalPayload('a.b.c', 'v9')), fresh.ctx);
  t.same(
    decode(Setting, fresh.state.get(addr) as Uint8Array).entries.map((e) => [e.key, e.value]),
    [
      ['z.z.z', '1'],
      ['a.b.c', 'v9'],
    ],
  );
  t.ok(events.includes('settings/update:a.b.c'));
  t.ok(new InvalidTransaction('x') instanceof Error);
});
