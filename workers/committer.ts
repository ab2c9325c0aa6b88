/**
 * Entry of the committer thread (worker_threads) of one ledger. Opens its own handle on
 * the LMDB environment (and, for the node's ledger, on its pending pool), composes the
 * committer with its collaborators (the node ledger's: src/ledger/compose.ts; a circuit's:
 * src/scabbard/compose.ts) and runs it; all traffic with the HTTP thread is messages.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { RootDatabase } from 'lmdb';
import { openEnv, openPendingEnv } from '../src/store/db.js';
import { loadOrCreateKey } from '../src/store/keys.js';
import { writeFailure } from '../src/store/errors.js';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { watchLmdbWriteErrors, writerStuck } from '../src/store/write-errors.js';
import { envPanicked } from '../src/store/reopen.js';
import { log } from '../src/log.js';
import { NODE_LEDGER } from '../src/ledger/description.js';
import { composeNodeCommitter } from '../src/ledger/compose.js';
import { composeCircuitCommitter } from '../src/scabbard/compose.js';
import { composeClusterCommitter } from '../src/cluster/compose.js';
import type { CommitterOptions, FromCommitter, ToCommitter } from '../src/ledger/protocol.js';

if (parentPort === null) throw new Error('workers/committer.ts runs only as a worker thread');
const port = parentPort;
const post = (m: FromCommitter): void => port.postMessage(m);

/** Opens the ledger's environments, composes its committer and runs it. */
function run(opts: CommitterOptions): void {
  const db = openEnv(opts.dataDir);
  // A circuit ledger started without the node's key file (a test's own service) signs with a
  // key of its own: members compare state roots and verdicts, never block ids.
  const signer = opts.nodeKeyFile ? loadOrCreateKey(opts.nodeKeyFile) : new Signer(randomPrivateKey());
  const envs: RootDatabase[] = [db];

  /** What the messages of the HTTP thread reach, by ledger kind. */
  type Handle = (m: ToCommitter) => void;
  let handle: Handle;
  const circuit = opts.circuit;
  const { committer } = (() => {
    if (circuit) {
      const c = composeCircuitCommitter(db, signer, opts, circuit, post);
      handle = (m) => {
        if (m.type === 'intake') c.rounds.add(m.batches);
        else if (m.type === 'propose') c.rounds.propose(m.round);
        else if (m.type === 'decide') c.consensus.decide(m.id, m.finalize, m.pauseMs);
        else if (m.type === 'catch-up') {
          // A member's held proposal is given up: the agreed rounds take its place. (The
          // coordinator's round awaiting its votes is decided first: its agreement waits for it.)
          if (!circuit.coordinator) c.consensus.abandon();
          c.rounds.catchUp(m.from, m.rounds);
        }
      };
      return c;
    }
    if (opts.cluster) {
      // A cluster member signs its blocks with the chain key: every member writes the same ones.
      const c = composeClusterCommitter(db, loadOrCreateKey(opts.cluster.chainKeyFile), opts, post);
      handle = (m) => {
        if (m.type === 'log') c.log.add(m.envelopes);
      };
      return c;
    }
    const pending = openPendingEnv(opts.dataDir, (opts.description ?? NODE_LEDGER).pendingFile);
    envs.push(pending);
    const n = composeNodeCommitter(db, pending, signer, opts, post);
    handle = (m) => {
      if (m.type === 'enqueue') n.enqueue(m.seg, m.batches);
      else if (m.type === 'client-send') n.committer.sendClient(m.peer, m.body);
    };
    return n;
  })();

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
    if (m.type !== 'shutdown') return handle(m);
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
if ('standby' in data) {
  port.once('message', (m: ToCommitter) => {
    if (m.type === 'begin') run(m.opts);
    else port.close();
  });
} else run(data);
