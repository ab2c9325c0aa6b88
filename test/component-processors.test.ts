/**
 * External transaction processors on the component endpoint: a processor written against
 * the validator protocol (test/helpers/processor.ts) registers its family and executes its
 * transactions; results, receipts and events show through interface C.
 */
import t from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import { newSigner, buildBatch, buildTransaction, batchList, postBatches, getJson, waitCommitted, intkeyBatch } from './helpers/batches.js';
import { TestProcessor, tallyAddress, tallySpec } from './helpers/processor.js';
import type { Signer } from '../src/crypto/secp256k1.js';
import { proposalPayload, settingsTxnAddresses } from '../src/families/settings.js';
import { decode, Transaction } from '../src/proto/index.js';
import { intkeyAddress as intkeyAddressOf } from '../src/families/intkey.js';

async function startNode(env: Record<string, string> = {}): Promise<{ n: TestNode; endpoint: string }> {
  const n = await startTestNode({ CAIRN_COMPONENT_BIND: '127.0.0.1:0', ...env });
  const endpoint = n.node.ledger.componentEndpoint;
  if (!endpoint) throw new Error('no component endpoint');
  return { n, endpoint };
}

function tallyBatch(signer: Signer, ...payloads: Array<Record<string, unknown>>): { id: string; bytes: Uint8Array; txnIds: string[] } {
  const txns = payloads.map((p) => buildTransaction(signer, tallySpec(p)));
  const b = buildBatch(signer, txns);
  return { ...b, txnIds: txns.map((x) => x.id) };
}

async function submit(n: TestNode, ...batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
  const r = await postBatches(n.ledgerUrl, batchList(...(batches as never[])));
  if (r.status !== 202) throw new Error(`submit answered ${r.status}: ${JSON.stringify(r.json)}`);
}

async function stateValue(n: TestNode, key: string): Promise<string | null> {
  const r = await getJson(`${n.ledgerUrl}/state/${tallyAddress(key)}`);
  return r.status === 200 ? Buffer.from(r.json.data, 'base64').toString() : null;
}

t.test('a processor registers, runs its transactions with state, events and receipt data', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const tp = new TestProcessor(endpoint);
  t.teardown(() => tp.close());
  t.equal(await tp.start(), 1, 'registration answered OK');

  const signer = newSigner();
  // Two transactions in one batch: the second sees the first one's write.
  const b = tallyBatch(signer, { op: 'add', key: 'apples', n: 5 }, { op: 'add', key: 'apples', n: 2 });
  await submit(n, b);
  const [status] = await waitCommitted(n.ledgerUrl, [b.id], 30);
  t.equal(status.status, 'COMMITTED');
  t.equal(await stateValue(n, 'apples'), '7', 'state written by the processor, read through interface C');
  t.equal(tp.received.length, 2, 'the processor ran both transactions');
  t.ok(tp.received[0]?.expanded, 'the expanded header was sent (default style)');
  t.equal(tp.received[0]?.headerBytes.length, 0, 'and no header_bytes');

  const receipts = await getJson(`${n.ledgerUrl}/receipts?id=${b.txnIds.join(',')}`);
  t.equal(receipts.status, 200);
  const [first, second] = receipts.json.data;
  t.equal(first.state_changes[0].address, tallyAddress('apples'));
  t.equal(Buffer.from(first.state_changes[0].value, 'base64').toString(), '5');
  t.equal(first.events[0].event_type, 'tally/added');
  t.same(first.events[0].attributes, [{ key: 'key', value: 'apples' }]);
  t.equal(Buffer.from(first.data[0], 'base64').toString(), 'apples: 0 -> 5');
  t.equal(Buffer.from(second.data[0], 'base64').toString(), 'apples: 5 -> 7', 'the second transaction saw the first');

  // Native families are not affected: intkey still commits without any processor.
  const ik = intkeyBatch(signer, [['set', 'native', 1]]);
  await submit(n, ik);
  t.equal((await waitCommitted(n.ledgerUrl, [ik.id], 30))[0].status, 'COMMITTED');

  // Delete through the processor.
  const del = tallyBatch(signer, { op: 'del', key: 'apples' });
  await submit(n, del);
  t.equal((await waitCommitted(n.ledgerUrl, [del.id], 30))[0].status, 'COMMITTED');
  t.equal(await stateValue(n, 'apples'), null, 'deleted');
});

t.test('a processor registered with the RAW header style gets the header bytes as signed', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const tp = new TestProcessor(endpoint, { raw: true });
  t.teardown(() => tp.close());
  t.equal(await tp.start(), 1);
  const signer = newSigner();
  const txn = buildTransaction(signer, tallySpec({ op: 'add', key: 'raw', n: 1 }));
  const b = buildBatch(signer, [txn]);
  await submit(n, b);
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED');
  const signed = Buffer.from(decode(Transaction, txn.bytes).header);
  t.same(tp.received[0]?.headerBytes, signed, 'header_bytes are the signed header bytes');
  t.equal(tp.received[0]?.expanded, false, 'no expanded header');
});

t.test('--external-families: a built-in family is run by a processor instead of natively', async (t) => {
  const { n, endpoint } = await startNode({ CAIRN_EXTERNAL_FAMILIES: 'intkey' });
  t.teardown(() => n.stop());
  const signer = newSigner();
  const b = intkeyBatch(signer, [['set', 'outsourced', 5]]);
  await submit(n, b);
  await new Promise((r) => setTimeout(r, 1500));
  t.equal((await getJson(`${n.ledgerUrl}/batch_statuses?id=${b.id}`)).json.data[0].status, 'PENDING', 'not run natively');
  // This processor answers OK without writing: the native intkey would have written the value.
  const tp = new TestProcessor(endpoint, { family: 'intkey', before: () => 'ok' });
  t.teardown(() => tp.close());
  await tp.start();
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED');
  t.equal(tp.received.length, 1, 'the processor ran it');
  const state = await getJson(`${n.ledgerUrl}/state?address=${intkeyAddressOf('outsourced')}`);
  t.same(state.json.data, [], 'nothing written: the native family did not run');
});

t.test('INVALID_TRANSACTION makes the batch INVALID with the message; the batches behind commit', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const tp = new TestProcessor(endpoint);
  t.teardown(() => tp.close());
  await tp.start();
  const signer = newSigner();
  const bad = tallyBatch(signer, { op: 'invalid', key: 'pears' });
  const good = tallyBatch(signer, { op: 'add', key: 'pears', n: 1 });
  await submit(n, bad, good);
  const statuses = await waitCommitted(n.ledgerUrl, [bad.id, good.id], 30);
  t.equal(statuses[0].status, 'INVALID');
  t.equal(statuses[0].invalid_transactions[0].message, 'tally refuses pears');
  t.equal(Buffer.from(statuses[0].invalid_transactions[0].extended_data, 'base64').toString(), 'details');
  t.equal(statuses[1].status, 'COMMITTED');
  t.equal(await stateValue(n, 'pears'), '1');
});

t.test('state outside the inputs and outputs is refused with AUTHORIZATION_ERROR', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const tp = new TestProcessor(endpoint);
  t.teardown(() => tp.close());
  await tp.start();
  const signer = newSigner();
  const b = tallyBatch(signer, { op: 'outside', key: 'plums' });
  // A write outside the outputs: inputs cover the address, outputs do not.
  const w = buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key: 'figs', n: 1 }, { outputs: [tallyAddress('other')] }))]);
  await submit(n, b, w);
  const statuses = await waitCommitted(n.ledgerUrl, [b.id, w.id], 30);
  t.equal(statuses[0].status, 'INVALID');
  t.match(statuses[0].invalid_transactions[0].message, /unauthorized address \(status 2 for message type 7\)/);
  t.equal(statuses[1].status, 'INVALID');
  t.match(statuses[1].invalid_transactions[0].message, /status 2 for message type 9/);
  t.ok(tp.stateStatuses.includes(2), 'the endpoint answered AUTHORIZATION_ERROR (2)');
  t.equal(await stateValue(n, 'figs'), null, 'nothing written');
});

t.test('INTERNAL_ERROR is retried until the processor answers', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const tp = new TestProcessor(endpoint, { before: (i) => (i.attempt <= 2 ? 'internal' : undefined) });
  t.teardown(() => tp.close());
  await tp.start();
  const signer = newSigner();
  const b = tallyBatch(signer, { op: 'add', key: 'kiwis', n: 3 });
  await submit(n, b);
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED');
  t.equal(tp.received.filter((r) => r.signature === b.txnIds[0]).length, 3, 'two INTERNAL_ERROR answers, then OK');
  t.equal(await stateValue(n, 'kiwis'), '3');
});

t.test('a processor that disconnects mid-transaction: the transaction runs on another one', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const quitter = new TestProcessor(endpoint, { before: () => 'vanish' });
  t.teardown(() => quitter.close());
  await quitter.start();
  const signer = newSigner();
  const b = tallyBatch(signer, { op: 'add', key: 'limes', n: 4 });
  await submit(n, b);
  // The quitter takes the transaction and goes away without answering.
  await waitFor(() => quitter.closed, 20_000);
  const status = await getJson(`${n.ledgerUrl}/batch_statuses?id=${b.id}`);
  t.equal(status.json.data[0].status, 'PENDING', 'not lost, not invalid: it waits');
  const second = new TestProcessor(endpoint);
  t.teardown(() => second.close());
  await second.start();
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED');
  t.equal(await stateValue(n, 'limes'), '4');
  t.equal(second.received.length, 1, 'run once more, by the second processor');
});

t.test('a batch of a family no processor serves waits, then commits when one registers', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const signer = newSigner();
  const b = tallyBatch(signer, { op: 'add', key: 'dates', n: 9 });
  await submit(n, b);
  // Batches of other families are not held back by it.
  const ik = intkeyBatch(signer, [['set', 'meanwhile', 1]]);
  await submit(n, ik);
  t.equal((await waitCommitted(n.ledgerUrl, [ik.id], 30))[0].status, 'COMMITTED');
  t.equal((await getJson(`${n.ledgerUrl}/batch_statuses?id=${b.id}`)).json.data[0].status, 'PENDING');
  const tp = new TestProcessor(endpoint);
  t.teardown(() => tp.close());
  await tp.start();
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED');
  t.equal(await stateValue(n, 'dates'), '9');
});

t.test('an unserved family expires after the dependency wait', async (t) => {
  const { n } = await startNode({ CAIRN_DEPENDENCY_WAIT: '2' });
  t.teardown(() => n.stop());
  const signer = newSigner();
  const b = tallyBatch(signer, { op: 'add', key: 'never', n: 1 });
  await submit(n, b);
  const [status] = await waitCommitted(n.ledgerUrl, [b.id], 30);
  t.equal(status.status, 'INVALID');
  t.match(status.invalid_transactions[0].message, /No transaction processor for tally 1\.0 finished the transaction within 2 s/);
});

t.test('sawtooth.validator.transaction_families leaving a family out makes it INVALID', async (t) => {
  const { n, endpoint } = await startNode();
  t.teardown(() => n.stop());
  const tp = new TestProcessor(endpoint);
  t.teardown(() => tp.close());
  await tp.start();
  const allowed = JSON.stringify([
    { family: 'sawtooth_settings', version: '1.0' },
    { family: 'intkey', version: '1.0' },
  ]);
  const key = 'sawtooth.validator.transaction_families';
  const s = buildBatch(n.node.nodeSigner, [
    buildTransaction(n.node.nodeSigner, {
      familyName: 'sawtooth_settings',
      familyVersion: '1.0',
      ...settingsTxnAddresses(key),
      payload: proposalPayload(key, allowed, 'n1'),
    }),
  ]);
  await submit(n, s);
  t.equal((await waitCommitted(n.ledgerUrl, [s.id], 30))[0].status, 'COMMITTED');
  const signer = newSigner();
  const b = tallyBatch(signer, { op: 'add', key: 'banned', n: 1 });
  const ik = intkeyBatch(signer, [['set', 'listed', 1]]);
  await submit(n, b, ik);
  const statuses = await waitCommitted(n.ledgerUrl, [b.id, ik.id], 30);
  t.equal(statuses[0].status, 'INVALID');
  t.equal(statuses[0].invalid_transactions[0].message, 'Transaction family tally 1.0 is not in sawtooth.validator.transaction_families');
  t.equal(statuses[1].status, 'COMMITTED', 'a listed family still runs');
  t.equal(tp.received.length, 0, 'the processor was never asked');
});

async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
