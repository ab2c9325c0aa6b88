/** Process entry: `npm start`. Reads flags and CAIRN_* variables, starts the node, stops on SIGINT/SIGTERM. */
import { loadConfig, usage, ConfigError } from './config.js';
import { startNode } from './node.js';
import { log } from './log.js';
import { StartupError } from './store/lock.js';

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
  const node = await startNode(config);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: shutting down`);
    node.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('shutdown failed', err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  if (err instanceof StartupError) {
    log.error(err.message);
    process.exit(err.exitCode);
  }
  log.error('failed to start', err);
  process.exit(1);
});
