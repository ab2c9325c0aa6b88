/** Process entry: `npm start`. Reads flags and CAIRN_* variables, starts the node, stops on SIGINT/SIGTERM. */
import { loadConfig, usage, ConfigError } from './config.js';
import { startNode, type RunningNode } from './node.js';
import { log } from './log.js';

/** Upper bound of an orderly stop after a fault: then the process ends regardless. */
const FAULT_EXIT_MS = 15_000;

let node: RunningNode | null = null;
let stopping = false;

/** Closes the node (in-flight answers are sent first) and ends the process with `code`. */
function stop(why: string, code: number): void {
  if (stopping) return;
  stopping = true;
  log.info(`${why}: shutting down`);
  if (code !== 0) setTimeout(() => process.exit(code), FAULT_EXIT_MS).unref();
  (node ? node.close() : Promise.resolve()).then(
    () => process.exit(code),
    (err: unknown) => {
      log.error('shutdown failed', err);
      process.exit(code || 1);
    },
  );
}

/**
 * An error nothing handled (a rejected promise, e.g. from inside the store library, or a
 * throw): the node can no longer vouch for its state. It stops acknowledging (the ledger
 * fault), then ends non-zero in order, so that a supervisor restarts it from disk.
 */
function onProcessError(what: string, err: unknown): void {
  const reason = `${what}: ${err instanceof Error ? err.message : String(err)}`;
  if (node && node.ledger.fault === null) node.ledger.markFaulty(reason);
  else {
    log.error(reason);
    if (!node) process.exit(1);
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--help')) {
    process.stdout.write(usage());
    return;
  }
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n\n${usage()}`);
      process.exit(2);
    }
    throw err;
  }
  process.on('unhandledRejection', (err) => onProcessError('unhandled promise rejection', err));
  process.on('uncaughtException', (err) => onProcessError('uncaught exception', err));
  node = await startNode(config);
  node.ledger.onFault(() => stop('ledger fault', 1));
  process.on('SIGINT', () => stop('SIGINT', 0));
  process.on('SIGTERM', () => stop('SIGTERM', 0));
}

main().catch((err: unknown) => {
  log.error('failed to start', err);
  process.exit(1);
});
