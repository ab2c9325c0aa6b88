/**
 * A committer fault crosses to the HTTP thread as a code plus a message (the code says
 * what stopped, the message names the cause). Drives the committer in-process with an
 * injected EIO on its first block transaction (genesis is the first).
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEnv, openPendingEnv } from '../src/store/db.js';
import { composeNodeCommitter, type NodeCommitter } from '../src/ledger/compose.js';
import type { FromCommitter } from '../src/ledger/protocol.js';
import { newSigner, intkeyBatch } from './helpers/batches.js';

t.test('a failed block write is reported as WRITE_FAILED with its cause', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-fault-code-'));
  const root = openEnv(dir);
  const pending = openPendingEnv(dir);
  const saved = process.env.CAIRN_TEST_FAULTS;
  process.env.CAIRN_TEST_FAULTS = 'ledger.write:EIO@2';
  const events: FromCommitter[] = [];
  let wake: (() => void) | null = null;
  const post = (m: FromCommitter): void => {
    events.push(m);
    wake?.();
  };
  const signer = newSigner();
  let committer: NodeCommitter;
  try {
    committer = composeNodeCommitter(
      root,
      pending,
      signer,
      {
        dataDir: dir,
        nodeKeyFile: '',
        maxBatchesPerBlock: 0,
        minBlockIntervalMs: 0,
        queueMultiplier: 10,
        queueInitialAverage: 30,
      },
      post,
    );
  } finally {
    if (saved === undefined) delete process.env.CAIRN_TEST_FAULTS;
    else process.env.CAIRN_TEST_FAULTS = saved;
  }
  t.teardown(async () => {
    await committer.close();
    await Promise.all([root.close(), pending.close()]);
    rmSync(dir, { recursive: true, force: true });
  });
  await committer.init();
  t.ok(
    events.some((e) => e.type === 'ready'),
    'genesis written (first write)',
  );
  const fatal = new Promise<FromCommitter>((resolve) => {
    wake = () => {
      const f = events.find((e) => e.type === 'fatal');
      if (f) resolve(f);
    };
  });
  const b = intkeyBatch(signer, [['set', 'k', 1]]);
  committer.enqueue(0, [{ id: b.id, bytes: b.bytes }]);
  const f = await fatal;
  t.equal(f.type === 'fatal' && f.code, 'WRITE_FAILED');
  t.match(f.type === 'fatal' && f.message, /^block 1 write failed: .*EIO/);
  t.notOk(
    events.some((e) => e.type === 'block'),
    'no block event for the failed write',
  );
});
