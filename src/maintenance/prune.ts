/**
 * Pruning of old state roots, offline (the node stopped, the directory locked). Merkle
 * records are content-addressed and shared between roots, so a record may go only when no
 * kept root reaches it: mark every record reachable from the state roots of the last
 * `keep` blocks (for a root between checkpoints: its checkpoint's root, which its state
 * delta names), then delete the others. Blocks, batches, receipts, state deltas and indexes are kept;
 * only state at older heads becomes unreadable (`head=` there answers 404, code 50).
 * LMDB reuses the freed pages for new data; the file itself does not shrink.
 */
import type { RootDatabase } from 'lmdb';
import { BlockHeader, Block, decode } from '../proto/index.js';
import { parseRecord, BRANCH_HEAD, ENTRY } from '../state/records.js';
import { deltaHead, PRUNED_BELOW } from '../state/deltas.js';
import { openLedgerStores, HEAD } from '../store/ledger-stores.js';

export interface PruneResult {
  keptFrom: number;
  head: number;
  keptRecords: number;
  removedRecords: number;
  removedBytes: number;
}

/** Deletes per write transaction (bounded, so one prune does not hold a huge transaction). */
const CHUNK = 10_000;

export async function pruneStateRoots(db: RootDatabase, keep: number): Promise<PruneResult> {
  if (!Number.isInteger(keep) || keep < 1) throw new RangeError('keep must be a positive integer');
  const s = openLedgerStores(db);
  const head = HEAD.get(s.meta);
  if (!head) throw new Error('the ledger has no head: nothing to prune');
  const keptFrom = Math.max(0, head.blockNum - keep + 1);
  const roots: Buffer[] = [];
  for (let num = keptFrom; num <= head.blockNum; num++) {
    const id = s.blockByNum.get(num);
    const bytes = id === undefined ? undefined : s.blocks.get(id);
    if (!bytes) throw new Error(`block ${num} is missing: run the check command first`);
    const h = decode(BlockHeader, decode(Block, bytes).header);
    const root = Buffer.from(h.stateRootHash, 'hex');
    if (s.merkle.doesExist(root)) {
      roots.push(root);
      continue;
    }
    // Between checkpoints: the state is the checkpoint's tree plus deltas.
    const delta = s.deltas.get(num);
    if (delta === undefined) throw new Error(`the state of block ${num} is missing: run the check command; nothing was pruned`);
    roots.push(Buffer.from(deltaHead(delta).baseRoot, 'hex'));
  }

  // Mark. A missing record means the directory is damaged: stop before deleting anything.
  const live = new Set<string>();
  const stack = [...roots];
  while (stack.length) {
    const key = stack.pop()!;
    const k = key.toString('latin1');
    if (live.has(k)) continue;
    const rec = s.merkle.getBinary(key);
    if (rec === undefined) throw new Error(`merkle record ${key.toString('hex')} is missing: run the check command; nothing was pruned`);
    live.add(k);
    const r = parseRecord(rec);
    if (r.branch) {
      for (let i = 0, o = BRANCH_HEAD + 1; i < r.n; i++, o += ENTRY) stack.push(Buffer.from(r.rec.subarray(o, o + 32)));
    } else if (!r.endLeaf) stack.push(Buffer.from(r.end));
  }

  // Sweep.
  let removedRecords = 0;
  let removedBytes = 0;
  let batch: Buffer[] = [];
  const flush = async (): Promise<void> => {
    const keys = batch;
    batch = [];
    await db.transaction(() => {
      for (const k of keys) s.merkle.remove(k);
    });
  };
  for (const { key, value } of s.merkle.getRange({})) {
    if (live.has(key.toString('latin1'))) continue;
    batch.push(Buffer.from(key));
    removedRecords++;
    removedBytes += key.length + value.length;
    if (batch.length >= CHUNK) await flush();
  }
  if (batch.length) await flush();
  const before = PRUNED_BELOW.get(s.meta) ?? 0;
  await PRUNED_BELOW.put(s.meta, Math.max(before, keptFrom));
  await db.flushed;
  return { keptFrom, head: head.blockNum, keptRecords: live.size, removedRecords, removedBytes };
}
