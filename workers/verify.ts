/**
 * piscina task file: verifies many submitted bodies per task (one task per flush of the
 * HTTP thread, never one per signature). Bodies arrive as copies; the HTTP thread keeps
 * its own and gets back only verdicts and byte ranges. The families the ledger accepts
 * are given once per worker.
 */
import { workerData } from 'node:worker_threads';
import { verifyBatchList, type VerifyResult } from '../src/ledger/verify.js';
import { familyLookup } from '../src/ledger/catalog.js';
import type { VerifyTask, VerifyWorkerData } from '../src/ledger/protocol.js';

const known = familyLookup((workerData as VerifyWorkerData).families);

export default function verifyTask(task: VerifyTask): VerifyResult[] {
  return task.bodies.map((b, i) => verifyBatchList(b, task.nodeKeyOnly[i], known));
}
