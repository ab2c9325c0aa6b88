/**
 * --memory-budget (src/config.ts): its parsing and the shares it sets (state records between
 * checkpoints, the block caches), an explicit --state-checkpoint-mib over its share, refusals;
 * and the block caches held within their share on a real node's chain.
 */
import t from 'tap';
import { loadConfig } from '../src/config.js';
import { ConfigError } from '../src/config/values.js';
import { ChainReader } from '../src/ledger-api/chain.js';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted } from './helpers/batches.js';

const MiB = 1024 * 1024;
const base = { CAIRN_DATA_DIR: '/tmp/cairn-budget-unused' };

t.test('the budget and its shares', async (t) => {
  const d = loadConfig([], base);
  t.equal(d.memoryBudgetMiB, 256, 'default 256 MiB');
  t.equal(d.stateCheckpointMiB, 64, 'a quarter for the state records between checkpoints');
  t.equal(d.blockJsonCacheBytes, 128 * MiB, "half for the gateway's block JSON");
  t.equal(d.blockCacheBytes, 16 * MiB, 'a sixteenth for each reader of decoded blocks');

  const g = loadConfig(['--memory-budget', '1GiB'], base);
  t.equal(g.memoryBudgetMiB, 1024);
  t.equal(g.stateCheckpointMiB, 256);
  t.equal(g.blockJsonCacheBytes, 512 * MiB);
  t.equal(loadConfig([], { ...base, CAIRN_MEMORY_BUDGET: '512MiB' }).memoryBudgetMiB, 512, 'from the environment, with a unit');
  t.equal(loadConfig([], { ...base, CAIRN_MEMORY_BUDGET: '96' }).stateCheckpointMiB, 24, 'a plain number is MiB');
  t.equal(loadConfig(['--memory-budget', '2g'], base).memoryBudgetMiB, 2048);
  t.equal(loadConfig(['--memory-budget=128M'], base).blockCacheBytes, 8 * MiB);

  const both = loadConfig(['--memory-budget', '128', '--state-checkpoint-mib', '100'], base);
  t.equal(both.stateCheckpointMiB, 100, 'an explicit --state-checkpoint-mib wins over its share');
  t.equal(both.blockJsonCacheBytes, 64 * MiB, 'the other shares still follow the budget');

  for (const bad of ['lots', '16', '0', '-1', '1.5GiB', '64 KiB']) {
    let err: unknown;
    try {
      loadConfig(['--memory-budget', bad], base);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof ConfigError, `refused: "${bad}"`);
  }
  t.throws(() => loadConfig(['--memory-budget', '16'], base), /memory budget: expected a size of at least 32 MiB/);
  t.equal(loadConfig([], { ...base, CAIRN_MEMORY_BUDGET: '' }).memoryBudgetMiB, 256, 'an empty variable is the default');
});

t.test("a reader's block caches stay within their shares as the chain is read", async (t) => {
  const n = await startTestNode({ CAIRN_MEMORY_BUDGET: '32' });
  t.teardown(() => n.stop());
  const signer = newSigner();
  for (let i = 0; i < 12; i++) {
    const b = intkeyBatch(signer, [['set', `mb${i}`, i]]);
    t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
    await waitCommitted(n.ledgerUrl, [b.id]);
  }
  const head = n.node.ledger.query.head();
  t.ok(head && head.blockNum >= 12, 'a chain of 13 blocks or more');
  const blockBytes = n.node.ledger.query.block(head?.blockId ?? '')?.length ?? 0;
  t.ok(blockBytes > 0);
  // Room for about three blocks in each cache.
  const reader = new ChainReader(n.node.ledger, { decodedBytes: 3 * blockBytes, jsonBytes: 3 * 2 * blockBytes });
  for (let num = 0; num <= (head?.blockNum ?? 0); num++) {
    t.equal(reader.jsonAt(num).id, reader.at(num).id);
    const c = reader.cached;
    if (c.decodedBytes > 3 * blockBytes + blockBytes || c.jsonBytes > 6 * blockBytes + 4 * blockBytes)
      t.fail(`over the bound at block ${num}: ${JSON.stringify(c)}`);
  }
  const c = reader.cached;
  t.ok(c.decodedBlocks >= 1 && c.decodedBlocks <= 4, `decoded blocks kept: ${c.decodedBlocks}`);
  t.ok(c.jsonBlocks >= 1 && c.jsonBlocks < 13, `JSON blocks kept: ${c.jsonBlocks}`);
  const none = new ChainReader(n.node.ledger, { decodedBytes: 0, jsonBytes: 0 });
  none.jsonAt(1);
  none.jsonAt(2);
  t.same([none.cached.decodedBlocks, none.cached.jsonBlocks], [1, 1], 'a zero share keeps the last block only');
  // The node's own settings follow its budget.
  t.same([n.node.config.memoryBudgetMiB, n.node.config.stateCheckpointMiB, n.node.config.blockJsonCacheBytes], [32, 8, 16 * MiB]);
});
