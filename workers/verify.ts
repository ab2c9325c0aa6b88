/**
 * piscina task file: verifies many submitted bodies per task (one task per flush of the
 * HTTP thread, never one per signature). Bodies arrive by transfer (no copy) and go back
 * the same way with the verdicts and byte ranges: the HTTP thread writes them to the
 * pending pool. The families the ledger accepts are given once per worker.
 */
import { workerData } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { verifyBatchList } from '../src/ledger/verify.js';
import { familyLookup } from '../src/ledger/catalog.js';
import type { VerifyReply, VerifyTask, VerifyWorkerData } from '../src/ledger/protocol.js';

const known = familyLookup((workerData as VerifyWorkerData).families);

export default function verifyTask(task: VerifyTask): unknown {
  const reply: VerifyReply = { results: task.bodies.map((b, i) => verifyBatchList(b, task.nodeKeyOnly[i], known)), bodies: task.bodies };
  const buffers = new Set<ArrayBuffer>();
  for (const b of task.bodies)
    if (b.buffer instanceof ArrayBuffer && b.byteOffset === 0 && b.byteLength === b.buffer.byteLength) buffers.add(b.buffer);
  return move({ [transferableSymbol]: [...buffers], [valueSymbol]: reply } as unknown as Parameters<typeof move>[0]);
}
