/**
 * piscina task file: verifies many submitted bodies per task (one task per flush of the
 * HTTP thread, never one per signature). The bodies arrive packed in one buffer, moved (not
 * copied), and go back the same way with the verdicts and byte ranges: the HTTP thread
 * writes them to the pending pool. The families the ledger accepts are given once per worker.
 */
import { workerData } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { verifyBatchList } from '../src/ledger/verify.js';
import { familyLookup } from '../src/ledger/catalog.js';
import type { VerifyReply, VerifyTask, VerifyWorkerData } from '../src/ledger/protocol.js';

const known = familyLookup((workerData as VerifyWorkerData).families);

export default function verifyTask(task: VerifyTask): unknown {
  const results = new Array<VerifyReply['results'][number]>(task.ends.length);
  let start = 0;
  for (let i = 0; i < task.ends.length; i++) {
    const end = task.ends[i]!;
    results[i] = verifyBatchList(Buffer.from(task.packed, start, end - start), task.nodeKeyOnly[i], known);
    start = end;
  }
  const reply: VerifyReply = { results, packed: task.packed };
  return move({ [transferableSymbol]: [task.packed], [valueSymbol]: reply } as unknown as Parameters<typeof move>[0]);
}
