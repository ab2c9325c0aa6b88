/**
 * The back-pressure limit follows the rolling average of batches per block: 10 × the
 * integer mean of the last 5 samples (starting with 30), a sample taken only when the
 * block consumed more than the average or left more than the average pending. Drives the
 * committer in-process and reads the limit from its block events.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEnv, openPendingEnv } from '../src/store/db.js';
import { composeNodeCommitter } from '../src/ledger/compose.js';
import type { FromCommitter } from '../src/ledger/protocol.js';
import { newSigner, intkeyBatch } from './helpers/batches.js';

t.test('limit = 10 × rolling average over a 5-sample window', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-queue-'));
  const root = openEnv(dir);
  const pending = openPendingEnv(dir);
  const events: FromCommitter[] = [];
  let wake: (() => void) | null = null;
  const post = (m: FromCommitter): void => {
    events.push(m);
    wake?.();
  };
  const nextBlock = (): Promise<FromCommitter> =>
    new Promise((resolve) => {
      wake = () => {
        const last = events.at(-1)!;
        if (last.type === 'block') {
          wake = null;
          resolve(last);
        }
      };
    });
  const signer = newSigner();
  const committer = composeNodeCommitter(
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
  t.teardown(async () => {
    await committer.close();
    await Promise.all([root.close(), pending.close()]);
    rmSync(dir, { recursive: true, force: true });
  });
  await committer.init();
  const ready = events.find((e) => e.type === 'ready');
  t.equal(ready?.type === 'ready' && ready.queueLimit, 300, 'starts at 10 × 30');

  let seq = 0;
  let name = 0;
  const block = async (n: number): Promise<number> => {
    const batches = Array.from({ length: n }, () => intkeyBatch(signer, [['set', `k${name++}`, 1]]));
    const done = nextBlock();
    committer.enqueue(
      seq,
      batches.map((b) => ({ id: b.id, bytes: b.bytes })),
    );
    seq += n;
    const e = await done;
    return e.type === 'block' ? e.queueLimit : -1;
  };
  t.equal(await block(40), 350, '40 > 30: samples [30, 40] → 35');
  t.equal(await block(10), 350, 'a small block leaves the average alone');
  t.equal(await block(100), 560, '[30, 40, 100] → 56');
  t.equal(await block(100), 670, '[30, 40, 100, 100] → 67');
  t.equal(await block(100), 740, '[30, 40, 100, 100, 100] → 74');
  t.equal(await block(100), 880, 'window of 5: [40, 100, 100, 100, 100] → 88');
});
