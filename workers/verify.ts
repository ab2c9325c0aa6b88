/**
 * piscina task file: verifies many submitted bodies per task (one task per flush of the
 * HTTP thread, never one per signature). The bodies arrive packed in one buffer, moved (not
 * copied), and go back the same way with the verdicts and byte ranges: the HTTP thread
 * writes them to the pending pool. The families the ledger accepts are given once per
 * worker; a task may carry its own list (a circuit ledger's checks share the node ledger's
 * workers).
 */
import { workerData } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { verifyBatchList } from '../src/ledger/verify.js';
import { familyLookup, type FamilyLookup } from '../src/ledger/catalog.js';
import type { VerifyReply, VerifyTask, VerifyWorkerData } from '../src/ledger/protocol.js';

const known = familyLookup((workerData as VerifyWorkerData).families);
/** Lookups of the family lists tasks carry (a circuit ledger's), built once per list. */
const byList = new Map<string, FamilyLookup>();

function lookupOf(families: string[] | undefined): FamilyLookup {
  if (families === undefined) return known;
  const key = families.join('\u0000');
  let l = byList.get(key);
  if (!l) {
    l = familyLookup(families);
    byList.set(key, l);
  }
  return l;
}

export default function verifyTask(task: VerifyTask): unknown {
  const lookup = lookupOf(task.families);
  const results = new Array<VerifyReply['results'][number]>(task.ends.length);
  let start = 0;
  task.ends.forEach((end, i) => {
    results[i] = verifyBatchList(Buffer.from(task.packed, start, end - start), task.nodeKeyOnly[i], lookup);
    start = end;
  });
  const reply: VerifyReply = { results, packed: task.packed };
  return move({ [transferableSymbol]: [task.packed], [valueSymbol]: reply } as unknown as Parameters<typeof move>[0]);
}
