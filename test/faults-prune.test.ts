/**
 * Offline pruning of old state roots: the kept heads and the current state still read
 * correctly, the integrity check passes, a pruned head answers 404 code 50, and the
 * command refuses a directory a running node holds.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { startTestNode } from './helpers/node.js';
import { runToExit } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted, getJson } from './helpers/batches.js';
import { intkeyAddress } from '../src/families/intkey.js';

const merkleCount = async (dir: string): Promise<number> => {
  const env = open({ path: join(dir, 'ledger.mdb'), maxDbs: 128, readOnly: true });
  const n = env.openDB('ledger.merkle', { keyEncoding: 'binary', encoding: 'binary' }).getKeysCount();
  await env.close();
  return n;
};

// With a checkpoint every block every root's records are stored (the count below must drop);
// with the default, the roots are deltas over the empty root's checkpoint.
for (const every of ['1', '256'])
  t.test(`prune keeps the last N state roots and the current state, and drops older ones (checkpoint every ${every})`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-prune-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const signer = newSigner();
    let n = await startTestNode({ CAIRN_STATE_CHECKPOINT_BLOCKS: every }, dir);
    const blocks: string[] = [];
    // One block per batch; key k changes each time, so old roots hold records no later root needs.
    for (let i = 0; i < 8; i++) {
      const b = intkeyBatch(signer, [
        [i === 0 ? 'set' : 'inc', 'k', i === 0 ? 0 : 1],
        ['set', `only${i}`, i],
      ]);
      t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
      t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED');
      const head = await getJson(`${n.ledgerUrl}/blocks?limit=1`);
      blocks.push(head.json.data[0].header_signature);
    }
    // While the node runs, prune refuses (the directory is locked).
    const busy = await runToExit(['src/cli/prune.ts', '--data-dir', dir, '--keep', '3'], process.env);
    t.equal(busy.code, 2, busy.log);
    t.match(busy.log, 'in use by another process');
    await n.stop({ keepData: true });

    const before = await merkleCount(dir);
    const r = await runToExit(['src/cli/prune.ts', '--data-dir', dir, '--keep', '3'], process.env);
    t.equal(r.code, 0, r.log);
    t.match(
      r.log,
      /pruned .*: the state of blocks 6 to 8 stays readable \(\d+ Merkle records?\); (\d+ older records? removed|nothing older to remove)/,
    );
    const after = await merkleCount(dir);
    t.ok(every === '1' ? after < before : after <= before, `merkle records ${before} -> ${after}`);

    const c = await runToExit(['src/cli/check.ts', '--data-dir', dir], process.env);
    t.equal(c.code, 0, c.log);

    n = await startTestNode({ CAIRN_STATE_CHECKPOINT_BLOCKS: every }, dir);
    t.teardown(() => n.stop({ keepData: true }));
    const value = async (name: string, head?: string) => getJson(`${n.ledgerUrl}/state/${intkeyAddress(name)}${head ? `?head=${head}` : ''}`);
    for (let i = 0; i < 8; i++) t.equal((await value(`only${i}`)).status, 200, `current state keeps only${i}`);
    // Blocks 6, 7, 8 are the last three (block i+1 holds batch i).
    for (const i of [5, 6, 7]) {
      const v = await value('k', blocks[i]);
      t.equal(v.status, 200, `kept head of block ${i + 1}`);
      t.equal(v.json.head, blocks[i]);
      t.equal(Buffer.from(v.json.data, 'base64').at(-1), i, 'the value as of that block');
    }
    const pruned = await value('k', blocks[3]);
    t.equal(pruned.status, 404);
    t.match(pruned.json, {
      error: { code: 50, message: /^The block exists, but its state root [0-9a-f]{64} is not available: pruned \(cairn prune\)/ },
    });
    // The chain itself is intact: the pruned block still reads.
    t.equal((await getJson(`${n.ledgerUrl}/blocks/${blocks[3]}`)).status, 200);
    // And the node keeps committing on top of the pruned store.
    const b = intkeyBatch(signer, [['inc', 'k', 100]]);
    await postBatches(n.ledgerUrl, batchList(b));
    t.equal((await waitCommitted(n.ledgerUrl, [b.id], 30))[0].status, 'COMMITTED');
  });

t.test('prune refuses bad arguments', async (t) => {
  const r = await runToExit(['src/cli/prune.ts', '--data-dir', tmpdir(), '--keep', '0'], process.env);
  t.equal(r.code, 2);
  t.match(r.log, /^cairn prune: --keep takes a whole number of blocks, at least 1, got "0" \(cairn prune --help shows the usage\)$/m);
});
