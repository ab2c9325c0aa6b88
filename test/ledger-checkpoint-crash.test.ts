/**
 * kill -9 between two state checkpoints: the head's Merkle records are not on disk, only
 * the last checkpoint's and the deltas after it. After the restart every acknowledged
 * batch is committed, the blocks reported before the kill keep their state roots, and the
 * head's root is the root of exactly the leaves the node serves (a clean rebuild from the
 * leaves gives the same root), with the values the batches set.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { startChild } from './helpers/child.js';
import { startTestNode } from './helpers/node.js';
import { walkPages } from './helpers/ledger-api.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted, getJson } from './helpers/batches.js';
import { intkeyAddress } from '../src/families/intkey.js';
import { decode } from '../src/codec/cbor.js';
import { rootOf } from '../src/state/merkle.js';
import { openEnv, openPendingEnv } from '../src/store/db.js';
import { checkLedger } from '../src/maintenance/integrity.js';
import { openStore } from '../src/store/checksum.js';

const EVERY = 5;
const SMALL: Record<string, string> = { CAIRN_STATE_CHECKPOINT_BLOCKS: String(EVERY), CAIRN_MAX_BATCHES_PER_BLOCK: '3' };

/** What the data directory holds: head block, last checkpoint block, whether the head's root records are stored. */
async function layout(dir: string): Promise<{ head: number; checkpoint: number; headStored: boolean }> {
  const env = open({ path: join(dir, 'ledger.mdb'), maxDbs: 128, readOnly: true });
  try {
    const meta = openStore<unknown, string>(env, 'ledger.meta');
    const merkle = env.openDB<Buffer, Buffer>('ledger.merkle', { keyEncoding: 'binary', encoding: 'binary' });
    const head = meta.get('head') as { blockNum: number; stateRoot: string };
    const cp = meta.get('state_checkpoint') as { blockNum: number } | undefined;
    return { head: head.blockNum, checkpoint: cp?.blockNum ?? -1, headStored: merkle.doesExist(Buffer.from(head.stateRoot, 'hex')) };
  } finally {
    await env.close();
  }
}

for (const [name, SMALL_BLOCKS] of [
  ['', SMALL],
  // Eight records per block: every checkpoint is spread over many blocks, so the kill lands in one.
  [' (checkpoints spread over blocks)', { ...SMALL, CAIRN_STATE_CHECKPOINT_CHUNK: '8' }],
] as const)
  t.test(`kill -9 between checkpoints${name}: acknowledged batches, block roots and the head state survive`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-cpcrash-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const signer = newSigner();
    let child = await startChild(dir, SMALL_BLOCKS);
    t.teardown(() => child.kill9());
    const expected = new Map<string, number>();
    const acked: string[] = [];

    // Enough blocks for a checkpoint or two, all committed.
    const first = Array.from({ length: 24 }, (_, i) => intkeyBatch(signer, [['set', `a${i}`, i]]));
    for (const b of first) {
      const r = await postBatches(child.ledgerUrl, batchList(b));
      if (!t.equal(r.status, 202))
        t.comment(
          JSON.stringify(r.json),
          child
            .log()
            .split('\n')
            .filter((l) => /error|warn|alarm/i.test(l))
            .slice(-6)
            .join('\n'),
        );
    }
    for (let i = 0; i < first.length; i += 12) {
      const st = await waitCommitted(
        child.ledgerUrl,
        first.slice(i, i + 12).map((b) => b.id),
        60,
      );
      t.ok(
        st.every((s: { status: string }) => s.status === 'COMMITTED'),
        'first batches committed',
      );
    }
    first.forEach((b, i) => {
      acked.push(b.id);
      expected.set(`a${i}`, i);
    });

    // Then a stream, killed in the middle. On a starved machine the kill may land on a
    // checkpoint block after all: the node is started again on its data and killed again.
    let seq = 0;
    const reported = new Map<string, string>(); // block id -> state root, as served before the kill
    let at = { head: 0, checkpoint: -1, headStored: true };
    for (let attempt = 1; attempt <= 4; attempt++) {
      if (attempt > 1) {
        t.comment(`attempt ${attempt - 1} was killed at block ${at.head}, a checkpoint (${at.checkpoint}): again`);
        child = await startChild(dir, SMALL_BLOCKS);
      }
      await streamAndKill();
      at = await layout(dir);
      if (at.head > at.checkpoint && !at.headStored) break;
    }
    async function streamAndKill(): Promise<void> {
      let stop = false;
      const start = seq;
      const worker = async (): Promise<void> => {
        while (!stop) {
          const i = seq++;
          const b = intkeyBatch(signer, [['set', `b${i}`, i]]);
          try {
            const r = await postBatches(child.ledgerUrl, batchList(b));
            if (r.status === 202) {
              acked.push(b.id);
              expected.set(`b${i}`, i);
            }
            const blocks = await getJson(`${child.ledgerUrl}/blocks?limit=5`);
            for (const blk of blocks.json.data) reported.set(blk.header_signature, blk.header.state_root_hash);
          } catch {
            return; // the connection died with the process
          }
        }
      };
      const loops = Array.from({ length: 4 }, () => worker());
      for (let waited = 0; seq < start + 30 && waited < 20_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      // Stop at a head that is not a checkpoint (retrying a little while the stream goes on).
      let stopped = false;
      for (let tries = 0; tries < 200 && !stopped; tries++) {
        const head = (await getJson(`${child.ledgerUrl}/blocks?limit=1`)).json.data[0];
        const num = Number(head.header.block_num);
        // A head three blocks before the next checkpoint block (blocks EVERY-1, 2·EVERY-1, …):
        // blocks committed between this read and the kill still land before the checkpoint.
        if (num % EVERY === 0 && num > EVERY) {
          await child.kill9();
          stopped = true;
        } else await new Promise((r) => setTimeout(r, 20));
      }
      if (!stopped) await child.kill9();
      stop = true;
      await Promise.all(loops);
    }

    t.ok(at.checkpoint >= EVERY - 1, `a checkpoint was written (block ${at.checkpoint})`);
    t.ok(
      at.head > at.checkpoint && !at.headStored,
      `killed at block ${at.head}, after the checkpoint at ${at.checkpoint}: the head's records were not stored`,
    );

    const n = await startTestNode(SMALL_BLOCKS, dir);
    let running = true;
    t.teardown(() => (running ? n.stop({ keepData: true }) : undefined));
    for (let i = 0; i < acked.length; i += 100) {
      const chunk = acked.slice(i, i + 100);
      const r = await fetch(`${n.ledgerUrl}/batch_statuses?wait=60`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chunk),
      });
      const data = ((await r.json()) as { data: Array<{ id: string; status: string }> }).data;
      const bad = data.filter((s) => s.status !== 'COMMITTED');
      t.same(bad, [], `acknowledged batches ${i}..${i + chunk.length - 1} are committed`);
    }

    // Every block reported before the kill still has the root it had.
    t.ok(reported.size > 0);
    for (const [id, root] of reported) {
      const r = await getJson(`${n.ledgerUrl}/blocks/${id}`);
      t.equal(r.json.data?.header?.state_root_hash, root, `block ${id.slice(0, 12)}… keeps its root`);
    }

    // The head's state: the values set, and the root a clean rebuild from the leaves gives.
    const head = (await getJson(`${n.ledgerUrl}/blocks?limit=1`)).json.data[0];
    const pages = await walkPages(`${n.ledgerUrl}/state?head=${head.header_signature}&limit=1000`);
    const leaves = new Map<string, Uint8Array>();
    for (const p of pages) for (const e of p.json.data) leaves.set(e.address, Buffer.from(e.data, 'base64'));
    t.equal(rootOf(leaves), head.header.state_root_hash, 'the head root is the root of the leaves served');
    let wrong = 0;
    for (const [name, value] of expected) {
      const raw = leaves.get(intkeyAddress(name));
      const m = raw === undefined ? undefined : (decode(raw) as Map<string, number>);
      if (m?.get(name) !== value) wrong++;
    }
    t.equal(wrong, 0, `all ${expected.size} acknowledged values are in the state`);

    // The integrity check reads the new layout: no problems.
    running = false;
    await n.stop({ keepData: true });
    const db = openEnv(dir);
    const pending = openPendingEnv(dir);
    try {
      const report = checkLedger(db, pending, dir);
      t.same(report.problems, [], 'the integrity check finds no problem');
      t.ok(report.stateLeaves >= expected.size);
    } finally {
      await db.close();
      await pending.close();
    }
  });

t.test('head= reads past roots between checkpoints, and answers 404 code 50 beyond --state-history-blocks', async (t) => {
  const n = await startTestNode({ CAIRN_STATE_CHECKPOINT_BLOCKS: '3', CAIRN_STATE_HISTORY_BLOCKS: '3' });
  t.teardown(() => n.stop());
  const signer = newSigner();
  const blocks: string[] = [];
  // One block per batch: k takes the values 0..5, block by block.
  for (let i = 0; i < 6; i++) {
    const b = intkeyBatch(signer, [i === 0 ? ['set', 'k', 0] : ['inc', 'k', 1]]);
    t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
    t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED');
    blocks.push((await getJson(`${n.ledgerUrl}/blocks?limit=1`)).json.data[0].header_signature);
  }
  const at = (head: string) => getJson(`${n.ledgerUrl}/state/${intkeyAddress('k')}?head=${head}`);
  for (const i of [3, 4, 5]) {
    const r = await at(blocks[i] as string);
    t.equal(r.status, 200, `head of batch ${i} is within the history`);
    t.equal((decode(Buffer.from(r.json.data, 'base64')) as Map<string, number>).get('k'), i, 'with the value as of that block');
  }
  const old = await at(blocks[2] as string);
  t.equal(old.status, 404);
  t.match(old.json, { error: { code: 50, message: /state root [0-9a-f]{64} is not available/ } });
  const list = await getJson(`${n.ledgerUrl}/state?head=${blocks[1]}`);
  t.equal(list.status, 404);
  t.equal(list.json.error.code, 50);
});
