/**
 * Entry of the committer thread (worker_threads) of one ledger. Opens its own handle on
 * the LMDB environment and on the ledger's pending pool, and runs the Committer; all
 * traffic with the HTTP thread is messages.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openEnv, openPendingEnv } from '../src/store/db.js';
import { Committer } from '../src/ledger/committer.js';
import { loadOrCreateKey } from '../src/store/keys.js';
import { writeFailure } from '../src/store/errors.js';
import { watchLmdbWriteErrors } from '../src/store/write-errors.js';
import { NODE_LEDGER } from '../src/ledger/description.js';
import type { CommitterOptions, FromCommitter, ToCommitter } from '../src/ledger/protocol.js';

if (parentPort === null) throw new Error('workers/committer.ts runs only as a worker thread');
const port = parentPort;
const opts = workerData as CommitterOptions;
const post = (m: FromCommitter): void => port.postMessage(m);
const db = openEnv(opts.dataDir);
const pending = openPendingEnv(opts.dataDir, (opts.description ?? NODE_LEDGER).pendingFile);
const committer = new Committer(db, pending, loadOrCreateKey(opts.nodeKeyFile), opts, post);

// An error nothing handled stops block production and is reported as a fault (the node
// then stops acknowledging and restarts), instead of ending this thread silently.
// A failed LMDB commit is reported by its actual cause (EIO, ENOSPC), not lmdb-js's wrapper.
const halt = (what: string, err: unknown): void =>
  void writeFailure(err).then((cause) => committer.halt(`${what} in the committer thread: ${cause.message}`));
process.on('unhandledRejection', (err) => halt('unhandled promise rejection', err));
process.on('uncaughtException', (err) => halt('uncaught exception', err));
// A commit whose pages could not be written (lmdb-js prints it and settles none of its
// promises): the blocks in flight will never be durable, so the committer fails now and the
// ledger recovers it, instead of waiting out the stall limit with every batch held.
watchLmdbWriteErrors((err) => committer.fail('WRITE_FAILED', `the storage library could not write a transaction: ${err.message}`));

port.on('message', (m: ToCommitter) => {
  if (m.type === 'enqueue') committer.enqueue(m.seg, m.batches);
  else if (m.type === 'client-send') committer.sendClient(m.peer, m.body);
  else if (m.type === 'shutdown') {
    void committer
      .close()
      .then(() => Promise.all([db.close(), pending.close()]))
      .finally(() => {
        post({ type: 'closed' });
        port.close();
      });
  }
});

committer.init().catch((err: unknown) => post({ type: 'fatal', code: 'START_FAILED', message: `committer failed to start: ${String(err)}` }));
