/**
 * Storage faults, injected through the test-only hook (CAIRN_TEST_FAULTS): a failed
 * pending-pool write answers 503 to its request and raises the IO alarm, which the node
 * clears by itself once a probe write succeeds; a failed ledger write raises the alarm (503
 * on every write, /status 503) until the restarted committer recovers, and, under load in a
 * separate process, the same process then commits every acknowledged batch exactly once,
 * with no gap in the chain.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestNode } from './helpers/node.js';
import { startChild } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, postBatches, getJson, waitCommitted } from './helpers/batches.js';
import { intkeyAddress } from '../src/families/intkey.js';
import { decode as cborDecode } from '../src/codec/cbor.js';
import { spares } from '../src/ledger/committer-client.js';

async function statusesOf(url: string, ids: string[]): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const r = await fetch(`${url}/batch_statuses?wait=60`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ids.slice(i, i + 500)),
    });
    out.push(...((await r.json()) as { data: Array<{ status: string }> }).data.map((s) => s.status));
  }
  return out;
}

async function withFaults<T>(spec: string, fn: () => Promise<T>): Promise<T> {
  process.env.CAIRN_TEST_FAULTS = spec;
  try {
    return await fn();
  } finally {
    delete process.env.CAIRN_TEST_FAULTS;
  }
}

t.test('a failed pending write answers 503 to that request only', async (t) => {
  const n = await withFaults('pending.write:ENOSPC@2', () => startTestNode());
  t.teardown(() => n.stop());
  const raised: Array<{ kind: string }> = [];
  n.node.ledger.alarms.onChange((up, a) => {
    if (up) raised.push(a);
  });
  const signer = newSigner();
  const [a, b, c] = [1, 2, 3].map((i) => intkeyBatch(signer, [['set', `p${i}`, i]]));
  t.equal((await postBatches(n.ledgerUrl, batchList(a!))).status, 202);
  const failed = await postBatches(n.ledgerUrl, batchList(b!));
  t.equal(failed.status, 503);
  t.equal(failed.json.error.code, 18);
  t.match(failed.json.error.message, /could not be stored.*ENOSPC/);
  t.same(
    raised.map((a) => a.kind),
    ['NOSPACE'],
    'the failed write raised the alarm',
  );
  for (let i = 0; i < 200 && n.node.ledger.fault !== null; i++) await new Promise((r) => setTimeout(r, 50));
  t.equal(n.node.ledger.fault, null, 'cleared by itself once a probe write succeeds');
  t.equal((await postBatches(n.ledgerUrl, batchList(c!))).status, 202, 'the next write works again');
  const st = await waitCommitted(n.ledgerUrl, [a!.id, b!.id, c!.id]);
  t.same(
    st.map((s: { status: string }) => s.status),
    ['COMMITTED', 'UNKNOWN', 'COMMITTED'],
  );
});

t.test('a failed ledger write: the IO alarm, then the restarted committer commits the batch', async (t) => {
  // Write 1 is genesis; the first block after it fails.
  const n = await withFaults('ledger.write:EIO@2', () => startTestNode());
  let stopped = false;
  t.teardown(() => (stopped ? undefined : n.stop()));
  t.notOk(spares.started, 'no spare thread yet: the node has not run 10 s');
  const seen: string[] = [];
  n.node.ledger.alarms.onChange((up, a) => seen.push(`${up ? 'raised' : 'cleared'} ${a.kind}: ${a.cause}`));
  const signer = newSigner();
  const a = intkeyBatch(signer, [['set', 'f', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(a))).status, 202);
  const st = await statusesOf(n.ledgerUrl, [a.id]);
  t.same(st, ['COMMITTED'], 'committed by the restarted committer');
  t.same(seen, ['raised IO: I/O error on ledger.mdb', 'cleared IO: I/O error on ledger.mdb']);
  t.equal(n.node.ledger.fault, null);
  const blocks = (await getJson(`${n.ledgerUrl}/blocks`)).json.data as Array<{ header: { block_num: string; batch_ids: string[] } }>;
  t.same(
    blocks.map((b) => b.header.block_num),
    ['1', '0'],
    'no gap',
  );
  t.same(blocks[0]?.header.batch_ids, [a.id], 'block 1 holds the batch');
  t.ok(spares.started, "the recovery started the process's next spare thread");
  stopped = true;
  await n.stop();
  t.notOk(spares.started, 'the node closed: its ledger left, and the spare ended');
});

t.test('a failed block write under load: the same process recovers and commits every acknowledged batch once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-fault-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Genesis is write 1; block writes from 2 on; the 6th write fails while later blocks are built.
  const child = await startChild(dir, { CAIRN_TEST_FAULTS: 'ledger.write:EIO@6', CAIRN_MAX_BATCHES_PER_BLOCK: '5' });
  t.teardown(() => child.kill());
  const signer = newSigner();
  const acked: string[] = [];
  const answers: Record<number, number> = {};
  const names = ['x', 'y', 'z'];
  const seed = intkeyBatch(
    signer,
    names.map((k) => ['set', k, 0] as [string, string, number]),
  );
  t.equal((await postBatches(child.ledgerUrl, batchList(seed))).status, 202);
  acked.push(seed.id);
  t.equal((await waitCommitted(child.ledgerUrl, [seed.id]))[0].status, 'COMMITTED');
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; i < 200; i++) {
      const b = intkeyBatch(signer, [['inc', names[(w + i) % 3]!, 1]]);
      try {
        const r = await postBatches(child.ledgerUrl, batchList(b));
        answers[r.status] = (answers[r.status] ?? 0) + 1;
        if (r.status === 202) acked.push(b.id);
      } catch {
        return; // the process ended
      }
    }
  };
  await Promise.all([0, 1, 2, 3].map(worker));
  t.equal(child.child.exitCode, null, 'the node is still running');
  t.same(
    Object.keys(answers).filter((s) => s !== '202' && s !== '503'),
    [],
    `answers ${JSON.stringify(answers)}`,
  );
  const lines = child.log().split('\n');
  t.equal(lines.filter((l) => l.includes('alarm raised: IO')).length, 1, 'one alarm line');
  t.match(child.log(), /committer stopped \(WRITE_FAILED\): committer: block \d+ write failed: EIO/);
  const n = { ledgerUrl: child.ledgerUrl };
  const st = await statusesOf(n.ledgerUrl, acked);
  t.equal(st.filter((s) => s === 'COMMITTED').length, acked.length, `all ${acked.length} acknowledged batches committed`);
  // The chain: contiguous numbers, each block on the previous, each batch once.
  const blocks = (await getJson(`${n.ledgerUrl}/blocks?limit=1000&reverse=false`)).json.data as Array<{
    header: { block_num: string; previous_block_id: string; batch_ids: string[] };
    header_signature: string;
  }>;
  blocks.sort((a, b) => Number(a.header.block_num) - Number(b.header.block_num));
  blocks.forEach((b, i) => {
    if (Number(b.header.block_num) !== i) t.fail(`block ${i} missing`);
    if (i > 0 && b.header.previous_block_id !== blocks[i - 1]!.header_signature) t.fail(`block ${i} not on block ${i - 1}`);
  });
  const inBlocks = blocks.flatMap((b) => b.header.batch_ids);
  t.equal(new Set(inBlocks).size, inBlocks.length, 'no batch twice');
  const inBlock = new Set(inBlocks);
  t.ok(
    acked.every((id) => inBlock.has(id)),
    'every acknowledged batch is in a block',
  );
  let sum = 0;
  for (const k of names) {
    const r = await getJson(`${n.ledgerUrl}/state/${intkeyAddress(k)}`);
    const m = cborDecode(Buffer.from(r.json.data, 'base64')) as Map<string, number> | Record<string, number>;
    sum += m instanceof Map ? m.get(k)! : m[k]!;
  }
  // Batches refused with 503 are not in the chain: the values equal the committed increments,
  // which are exactly the acknowledged ones.
  const committedIncs = inBlocks.length - 2; // genesis and seed
  t.equal(committedIncs, acked.length - 1, `${committedIncs} increments committed, ${acked.length - 1} acknowledged`);
  t.equal(sum, committedIncs, 'intkey values equal the sum of the committed increments');
});
