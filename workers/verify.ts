/**
 * piscina task file: verifies many submitted bodies per task (one task per flush of the
 * HTTP thread, never one per signature). Bodies arrive as copies; the HTTP thread keeps
 * its own and gets back only verdicts and byte ranges.
 */
import { verifyBatchList, type VerifyResult } from '../src/ledger/verify.js';

export interface VerifyTask {
  bodies: Uint8Array[];
  /** When set, a body must contain a batch signed by this key (queue-full exemption). */
  nodeKeyOnly: Array<string | undefined>;
}

export default function verifyTask(task: VerifyTask): VerifyResult[] {
  return task.bodies.map((b, i) => verifyBatchList(b, task.nodeKeyOnly[i]));
}
