/** Idle footprint: starts a node on a fresh data directory, lets it settle, prints its RSS. */
import { startBenchNode } from './lib/node.js';
import { envInt } from './lib/env.js';

const SETTLE_MS = envInt('SETTLE_MS', 5000, 0);

export async function runIdle(): Promise<object> {
  const node = await startBenchNode();
  try {
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { bench: 'idle', settleMs: SETTLE_MS, rssMiB: Math.round(node.rssMiB()), rssAnonMiB: Math.round(node.rssAnonMiB()) };
  } finally {
    await node.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runIdle().then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
}
