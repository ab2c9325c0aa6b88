/**
 * What a wake-up costs on this machine:
 * - the CPU a process is charged for one sleep and wake-up (a timer that fires 120 and 20
 *   times a second), against one turn of the event loop that does not sleep (setImmediate);
 * - one message to a worker thread and back (postMessage, as between the HTTP thread and the
 *   verify and committer threads), both threads sleeping between messages.
 * A cluster spreads the same batches over more processes and threads, each waking more often
 * for less work than one node under the same load, so where a wake-up is dear (a nested
 * virtual machine) the cluster pays more than the single node for it (docs/performance.md).
 * `node --import tsx bench/wake.ts` prints one JSON line (about 15 s).
 */
import { Worker } from 'node:worker_threads';
import { envInt } from './lib/env.js';

const ROUNDS = envInt('ROUNDS', 600, 10);

const cpuUs = (since: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(since);
  return u.user + u.system;
};

async function timerWake(perSecond: number, rounds: number): Promise<number> {
  const since = process.cpuUsage();
  for (let i = 0; i < rounds; i++) await new Promise((r) => setTimeout(r, 1000 / perSecond));
  return cpuUs(since) / rounds;
}

async function loopTurn(rounds: number): Promise<number> {
  const since = process.cpuUsage();
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
  return cpuUs(since) / rounds;
}

/** Both threads' CPU (process.cpuUsage counts every thread) per round trip, 8 ms apart. */
async function threadRoundTrip(rounds: number): Promise<number> {
  const w = new Worker("require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m));", {
    eval: true,
  });
  try {
    const echo = (m: number): Promise<unknown> => new Promise((r) => w.once('message', r).postMessage(m));
    await echo(0);
    const since = process.cpuUsage();
    for (let i = 0; i < rounds; i++) {
      await echo(i);
      await new Promise((r) => setTimeout(r, 8));
    }
    return cpuUs(since) / rounds;
  } finally {
    await w.terminate();
  }
}

export async function runWake(): Promise<object> {
  const timer120 = await timerWake(120, ROUNDS);
  // The round trip's figure is given less this timer's own wake-up (each round sleeps 8 ms).
  const timer20 = await timerWake(20, Math.max(10, Math.round(ROUNDS / 6)));
  const turn = await loopTurn(ROUNDS * 30);
  const roundTrip = await threadRoundTrip(ROUNDS);
  const r = (n: number): number => Math.round(n * 10) / 10;
  return {
    bench: 'wake',
    timerWakeUs: { every8ms: r(timer120), every50ms: r(timer20) },
    loopTurnUs: r(turn),
    threadRoundTripUs: r(roundTrip - timer120),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runWake().then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
}
