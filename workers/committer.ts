/**
 * Entry of the committer thread (worker_threads) of one ledger. Opens its own handle on
 * the LMDB environment, runs the composition its options select (src/ledger/plugins.ts:
 * the node ledger's, src/ledger/compose.ts; a circuit's, src/scabbard/compose.ts; a
 * cluster member's, src/cluster/compose.ts), which opens what else it needs (the node's
 * pending pool), and hands it the HTTP thread's messages; all traffic is messages.
 *
 * This entry is the top of the layers: it loads the plug-ins, which register themselves
 * with the engine (compositions and the component endpoint's executor). It loads only those
 * its ledger's options name (PLUGINS): a circuit's thread does not load the cluster's code
 * or the component endpoint's (ZeroMQ), a node ledger's thread not the circuits': a thread
 * starts in two thirds of the time it took with all of them. A spare thread loads them all,
 * as it does not know yet which ledger it will run.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { RootDatabase } from 'lmdb';
import { openEnv } from '../src/store/db.js';
import { loadOrCreateKey } from '../src/store/keys.js';
import { writeFailure } from '../src/store/errors.js';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { watchLmdbWriteErrors, writerStuck } from '../src/store/write-errors.js';
import { envPanicked } from '../src/store/reopen.js';
import { log } from '../src/log.js';
import { compositionFor } from '../src/ledger/plugins.js';
import type { CommitterOptions, FromCommitter, PluginOptionsOf, ToCommitter } from '../src/ledger/protocol.js';
// The engine's default composition (a node's own ledger), which the others build on.
import '../src/ledger/compose.js';

/**
 * The plug-ins, each under the key of CommitterOptions that selects it: each registers its
 * composition or executor with the engine as it loads.
 */
const PLUGINS: Record<keyof PluginOptionsOf | 'sharedLog', () => Promise<unknown>> = {
  circuit: () => import('../src/scabbard/compose.js'),
  sharedLog: () => import('../src/cluster/compose.js'),
  component: () => import('../src/component/server.js'),
};

/** Loads the plug-ins `opts` names (all of them without options: a spare thread). */
async function loadPlugins(opts?: CommitterOptions): Promise<void> {
  const keys = Object.keys(PLUGINS) as Array<keyof typeof PLUGINS>;
  await Promise.all(keys.filter((k) => !opts || opts[k] !== undefined).map((k) => PLUGINS[k]()));
}

if (parentPort === null) throw new Error('workers/committer.ts runs only as a worker thread');
const port = parentPort;
const post = (m: FromCommitter): void => port.postMessage(m);

/** Opens the ledger's environments, composes its committer and runs it. */
function run(opts: CommitterOptions): void {
  const db = openEnv(opts.dataDir);
  // A circuit ledger started without the node's key file (a test's own service) signs with a
  // key of its own: members compare state roots and verdicts, never block ids.
  const signer = opts.nodeKeyFile ? loadOrCreateKey(opts.nodeKeyFile) : new Signer(randomPrivateKey());
  const composed = compositionFor(opts).compose({ db, signer, opts, post });
  const { committer } = composed;
  const envs: RootDatabase[] = [db, ...composed.envs];

  // An error nothing handled stops block production and is reported as a fault (the node
  // then stops acknowledging and restarts), instead of ending this thread silently.
  // A failed LMDB commit is reported by its actual cause (EIO, ENOSPC), not lmdb-js's wrapper.
  const halt = (what: string, err: unknown): void =>
    void writeFailure(err).then((cause) => committer.halt(`${what} in the committer thread: ${cause.message}`));
  process.on('unhandledRejection', (err) => halt('unhandled promise rejection', err));
  process.on('uncaughtException', (err) => halt('uncaught exception', err));
  // A commit whose pages could not be written (lmdb-js prints it and settles none of its
  // promises): the blocks in flight will never be durable, so the committer fails now and the
  // ledger recovers it, instead of waiting out the stall limit with every batch held. The print
  // is this thread's (each thread has its own console) and is the error of this thread's oldest
  // write in flight; a print when none is in flight is about a write that already settled, and
  // stops nothing (src/store/write-errors.ts).
  watchLmdbWriteErrors({
    onError: (err, write) =>
      committer.fail(
        write.env === 'pending' ? 'PENDING_CLEANUP_FAILED' : 'WRITE_FAILED',
        `the storage library could not complete ${write.what}: ${err.message}`,
      ),
    onStale: (err) => log.warn(`the storage library reported a write error after its write had settled (not a new failure): ${err.message}`),
  });

  port.on('message', (m: ToCommitter) => {
    if (m.type === 'begin') return;
    if (m.type !== 'shutdown') return composed.handle(m);
    void committer
      .close()
      // A failed committer says it is done at once (its component endpoint closed): the next
      // one can start meanwhile; its environments close after that (endFailed).
      .then(() => (committer.failed ? undefined : Promise.all(envs.map((e) => e.close()))))
      .finally(() => {
        post({ type: 'closed' });
        port.close();
        if (committer.failed) endFailed(envs);
      });
  });

  committer.init().catch((err: unknown) => post({ type: 'fatal', code: 'START_FAILED', message: `committer failed to start: ${String(err)}` }));
}

/**
 * Most a failed committer's thread waits for lmdb-js to close its environments before it ends
 * (ms). lmdb-js's close waits for the thread's writes in flight, and after a failed commit it
 * may settle some of them never: the thread ends by then anyway (its end closes its handles).
 * Long enough for a write under way to finish (a commit and its sync: milliseconds, a few
 * hundred on a loaded machine), as ending a thread in the middle of one is not safe; short, as
 * a broken environment's reopen waits for the thread's end (src/ledger/ledger.ts).
 */
const FAILED_EXIT_GRACE_MS = 500;

/** Ends the thread of a failed committer, once lmdb-js closed its environments or after the grace. */
function endFailed(envs: RootDatabase[]): void {
  // A stuck writer would make the end wait for ever, in the storage library: the thread stays
  // (idle; the ledger tells the operator to restart the node).
  if (writerStuck()) return;
  // On a broken environment (a failed meta-page write) every transaction fails at its start:
  // nothing is under way, and nothing would settle.
  if (envs.some(envPanicked)) process.exit(0);
  const grace = new Promise<void>((resolve) => setTimeout(resolve, FAILED_EXIT_GRACE_MS));
  void Promise.race([Promise.all(envs.map((e) => e.close())), grace]).finally(() => process.exit(0));
}

const data = workerData as CommitterOptions | { standby: true };
// A spare thread, started ahead so that a recovery does not wait for a thread to load its
// modules (src/ledger/committer-client.ts): it opens nothing until it is told which ledger to run.
// Messages that come while the plug-ins load wait in the port: it starts with its first listener.
if ('standby' in data) {
  await loadPlugins();
  port.once('message', (m: ToCommitter) => {
    if (m.type === 'begin') run(m.opts);
    else port.close();
  });
} else {
  await loadPlugins(data).then(
    () => run(data),
    (err: unknown) => post({ type: 'fatal', code: 'START_FAILED', message: `committer failed to start: ${String(err)}` }),
  );
}
