/**
 * Worker thread of `cairn bench`'s generator: signs ranges of the run's batches
 * (src/bench/workload.ts) and hands the bytes back moved, not copied.
 */
import { parentPort } from 'node:worker_threads';
import { signRange, type WorkloadSpec } from '../src/bench/workload.js';

if (parentPort === null) throw new Error('workers/bench-sign.ts runs only as a worker thread');
const port = parentPort;

port.on('message', (m: { spec: WorkloadSpec; start: number; count: number; tag?: string; gen: number }) => {
  const chunk = signRange(m.spec, m.start, m.count);
  // A capacity measurement only needs to know the work is done. `gen` names the generator that asked.
  if (m.tag) port.postMessage({ tag: m.tag, gen: m.gen });
  else port.postMessage({ ...chunk, gen: m.gen }, [chunk.bytes.buffer as ArrayBuffer]);
});
