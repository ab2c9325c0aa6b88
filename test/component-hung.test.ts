/**
 * A transaction processor that stops answering holds only its own transactions: with one
 * that never answers a process request (its socket still answers pings, as an SDK's does
 * while its apply hangs) or one that stops answering pings, the other families commit, its
 * batch stays PENDING with the reason in /batch_statuses and /status, and it is run once a
 * processor of the family answers (a late answer, a new registration, another processor).
 */
import t from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import { newSigner, buildBatch, buildTransaction, batchList, postBatches, getJson, waitCommitted, intkeyBatch } from './helpers/batches.js';
import { TestProcessor, tallyAddress, tallySpec } from './helpers/processor.js';
import type { Signer } from '../src/crypto/secp256k1.js';

/** Seconds a processor may take to answer (--processor-timeout) in this file. */
const TIMEOUT_S = 2;

const signer: Signer = newSigner();
let n: TestNode;
let endpoint: string;

t.before(async () => {
  n = await startTestNode({ CAIRN_COMPONENT_BIND: '127.0.0.1:0', CAIRN_PROCESSOR_TIMEOUT: String(TIMEOUT_S), CAIRN_METRICS: 'on' });
  const e = n.node.ledger.componentEndpoint;
  if (!e) throw new Error('no component endpoint');
  endpoint = e;
});
t.teardown(() => n.stop());

function familyBatch(family: string, key: string, amount: number): { id: string; bytes: Uint8Array } {
  return buildBatch(signer, [buildTransaction(signer, tallySpec({ op: 'add', key, n: amount }, {}, family))]);
}

async function submit(...batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
  const r = await postBatches(n.ledgerUrl, batchList(...(batches as never[])));
  if (r.status !== 202) throw new Error(`submit answered ${r.status}: ${JSON.stringify(r.json)}`);
}

async function statusOf(id: string): Promise<{ status: string; reason?: string }> {
  return (await getJson(`${n.ledgerUrl}/batch_statuses?id=${id}`)).json.data[0];
}

async function processorsView(): Promise<{
  families: Array<{ family: string; processors: number }>;
  set_aside: Array<{ family: string; reason: string }>;
  batches_set_aside: number;
  transactions_set_aside: number;
  processors_set_aside: number;
}> {
  const r = await getJson(`${n.ledgerUrl}/status`);
  if (r.status !== 200) throw new Error(`/status answered ${r.status}`);
  return r.json.data.transaction_processors;
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: not seen within ${ms} ms (last: ${JSON.stringify(v)})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stateValue(family: string, key: string): Promise<string | null> {
  const r = await getJson(`${n.ledgerUrl}/state/${tallyAddress(key, family)}`);
  return r.status === 200 ? Buffer.from(r.json.data, 'base64').toString() : null;
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${n.ledgerUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

t.test('a processor that never answers holds only its own family; another processor runs its batch', async (t) => {
  const family = 'silent';
  // Its socket answers pings; its apply never returns.
  const silent = new TestProcessor(endpoint, { family, before: () => new Promise<undefined>(() => undefined) });
  t.teardown(() => silent.close());
  t.equal(await silent.start(), 1, 'registered');
  const stuck = familyBatch(family, 'k', 5);
  await submit(stuck);
  await until(
    'the silent processor has the transaction',
    async () => silent.received.length,
    (c) => c === 1,
  );

  // Another family's batch, submitted while the processor holds the block: it commits once
  // the processor is set aside, within about the timeout.
  const other = intkeyBatch(signer, [['set', 'hung-a', 1]]);
  await submit(other);
  t.equal((await waitCommitted(n.ledgerUrl, [other.id], 20))[0].status, 'COMMITTED', 'another family commits past the silent processor');

  const s = await statusOf(stuck.id);
  t.equal(s.status, 'PENDING', 'its batch is neither lost nor invalid');
  t.match(
    s.reason,
    new RegExp(`^silent 1\\.0 \\(its processor [0-9a-f]+ did not answer transaction [0-9a-f]{16}… within ${TIMEOUT_S * 1000} ms\\)$`),
  );
  const view = await processorsView();
  t.same(
    view.set_aside.map((x) => x.family),
    [`${family} 1.0`],
    '/status names the family set aside',
  );
  t.match(view.set_aside[0]?.reason, /did not answer transaction/);
  t.ok(view.batches_set_aside >= 1, '/status counts the batch');
  t.ok(view.transactions_set_aside >= 1 && view.processors_set_aside >= 1, '/status counts the transaction and the processor');
  t.notOk(
    view.families.some((f) => f.family === `${family} 1.0`),
    'the family is served by no processor now',
  );
  t.ok((await metric('cairn_transactions_set_aside_total')) >= 1, 'metric: transactions set aside');
  t.ok((await metric('cairn_processors_set_aside_total')) >= 1, 'metric: processors set aside');
  t.ok((await metric('cairn_batches_set_aside')) >= 1, 'metric: batches set aside');

  // Later batches of other families do not wait at all; the silent processor is not asked again.
  const later = intkeyBatch(signer, [['set', 'hung-b', 2]]);
  await submit(later);
  t.equal((await waitCommitted(n.ledgerUrl, [later.id], 20))[0].status, 'COMMITTED');
  t.equal(silent.received.length, 1, 'the silent processor was asked once, not again and again');

  // A processor of the family that answers runs the batch.
  const good = new TestProcessor(endpoint, { family });
  t.teardown(() => good.close());
  await good.start();
  t.equal((await waitCommitted(n.ledgerUrl, [stuck.id], 20))[0].status, 'COMMITTED', 'run by the processor that answers');
  t.equal(await stateValue(family, 'k'), '5');
  const after = await statusOf(stuck.id);
  t.equal(after.reason, undefined, 'no reason once committed');
  const cleared = await processorsView();
  t.notOk(
    cleared.set_aside.some((x) => x.family === `${family} 1.0`),
    'the family is no longer listed as set aside',
  );
  t.equal(cleared.batches_set_aside, 0);
});

t.test('a processor that answers late serves its family again; its batch is run again on it', async (t) => {
  const family = 'slow';
  let release: () => void = () => undefined;
  const released = new Promise<void>((r) => {
    release = r;
  });
  // The first attempt answers only once released (after the timeout): that answer is late.
  const slow = new TestProcessor(endpoint, {
    family,
    before: async (i) => {
      if (i.attempt > 1) return undefined;
      await released;
      return 'ok';
    },
  });
  t.teardown(() => slow.close());
  await slow.start();
  const b = familyBatch(family, 'x', 3);
  await submit(b);
  const s = await until(
    'set aside',
    () => statusOf(b.id),
    (v) => v.reason !== undefined,
  );
  t.equal(s.status, 'PENDING');
  t.match(s.reason, /did not answer/);
  release();
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 20))[0].status, 'COMMITTED', 'committed once the processor answered again');
  t.equal(await stateValue(family, 'x'), '3', 'the late answer did not count; the second attempt wrote');
  t.equal(slow.received.filter((r) => r.signature === slow.received[0]?.signature).length, 2, 'sent twice: the lost attempt and the retry');
});

t.test('a processor that stops answering pings is set aside before it is given a transaction', async (t) => {
  const family = 'deaf';
  const deaf = new TestProcessor(endpoint, { family, answerPings: false });
  t.teardown(() => deaf.close());
  await deaf.start();
  const view = await until('set aside for its pings', processorsView, (v) => v.set_aside.some((x) => x.family === `${family} 1.0`));
  t.match(view.set_aside.find((x) => x.family === `${family} 1.0`)?.reason, /missed 3 pings in a row/);
  t.ok(deaf.pings >= 3, 'it was pinged');
  const b = familyBatch(family, 'y', 1);
  await submit(b);
  const s = await until(
    'the batch waits with the reason',
    () => statusOf(b.id),
    (v) => v.reason !== undefined,
  );
  t.equal(s.status, 'PENDING');
  t.match(s.reason, /missed 3 pings in a row/);
  t.equal(deaf.received.length, 0, 'not given the transaction');
  // Saying anything brings it back (here: registering again).
  t.equal(await deaf.register(), 1);
  t.equal((await waitCommitted(n.ledgerUrl, [b.id], 20))[0].status, 'COMMITTED', 'run once it answers again');
  t.equal(deaf.received.length, 1);
});
