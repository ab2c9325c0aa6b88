/**
 * `npm run bench`: runs every benchmark in turn (submit with 1- and 10-transaction batches,
 * submit at half of the measured peak rate, reads, circuit agreement on three nodes, a cluster
 * of three nodes over three etcd members against one node, growth), printing a progress line per
 * step on stderr and each bench's JSON line on stdout. BENCH_SKIP_CLUSTER=1 leaves the cluster
 * out (it needs `etcd` on PATH), BENCH_SKIP_GROWTH=1 the growth bench.
 */
import { spawnSync } from 'node:child_process';

interface Step {
  name: string;
  script: string;
  env: Record<string, string>;
}

function run(step: Step): Record<string, unknown> {
  process.stderr.write(`[bench] ${step.name} …\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', step.script], {
    env: { ...process.env, ...step.env },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`${step.name} failed with ${r.status}`);
  const line = r.stdout.trim().split('\n').at(-1)!;
  process.stdout.write(`${JSON.stringify({ step: step.name, ...JSON.parse(line) })}\n`);
  return JSON.parse(line) as Record<string, unknown>;
}

run({ name: 'idle footprint', script: 'bench/idle.ts', env: {} });
const single = run({ name: 'submit, 1 txn per batch', script: 'bench/submit.ts', env: { BATCHES: '30000', TXNS: '1', CONNECTIONS: '64' } });
run({ name: 'submit, 10 txns per batch', script: 'bench/submit.ts', env: { BATCHES: '5000', TXNS: '10', CONNECTIONS: '64' } });
const half = Math.max(100, Math.round(Number(single.committedBatchesPerSec) / 2));
run({
  name: `submit at half of peak (${half}/s)`,
  script: 'bench/submit.ts',
  env: { BATCHES: String(half * 20), TXNS: '1', CONNECTIONS: '64', RATE: String(half) },
});
run({ name: 'reads', script: 'bench/read.ts', env: {} });
run({ name: 'circuits, submit to ready on 3 nodes', script: 'bench/circuit.ts', env: { CIRCUITS: '20' } });
if (process.env.BENCH_SKIP_CLUSTER !== '1')
  run({ name: 'cluster: 3 etcd + 3 nodes, failover, against one node', script: 'bench/cluster.ts', env: {} });
if (process.env.BENCH_SKIP_GROWTH !== '1') run({ name: 'growth', script: 'bench/growth.ts', env: {} });
process.stderr.write('[bench] done\n');
