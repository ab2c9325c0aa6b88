/**
 * Data directories written before the id records (id-index.ts) kept two indexes keyed by id
 * (`<prefix>.batch_index`, and `<prefix>.txn_index` with each receipt inside). When a ledger
 * whose old batch index still holds entries is loaded, every block that lacks an id record gets it, built
 * from the block itself and the receipts of the old transaction index, and the old indexes
 * are emptied: all of it in one transaction, so a crash leaves either the old layout or the
 * new one.
 */
import { Block, decode } from '../proto/index.js';
import { encodeIdRecord, encodeReceipts } from './id-index.js';
import type { LedgerStores } from './ledger-stores.js';
import { ledgerDbNames } from './names.js';

/** Builds the missing id and receipt records; returns how many blocks got them. */
export function migrateIdIndexes(s: LedgerStores): number {
  const n = ledgerDbNames(s.prefix);
  const batchIndex = s.root.openDB<unknown, string>(n.legacyBatchIndex, {});
  // Written by no version since: entries there are a directory in the former layout.
  if (batchIndex.getKeysCount({ limit: 1 }) === 0) return 0;
  const txnIndex = s.root.openDB<[number, number, number, Buffer], string>(n.legacyTxnIndex, {});
  let done = 0;
  s.root.transactionSync(() => {
    // The stored blocks (a circuit ledger has none at its initial head, block 0).
    for (const { key: num, value: id } of s.blockByNum.getRange({})) {
      if (s.blockIds.doesExist(num)) continue;
      const bytes = s.blocks.get(id);
      if (!bytes) throw new Error(`block ${num} (${id}) is missing: the id records cannot be built (run the check command)`);
      const block = decode(Block, bytes);
      const receipts: Buffer[] = [];
      const ids = block.batches.map((b) => {
        for (const t of b.transactions) receipts.push(txnIndex.get(t.headerSignature)?.[3] ?? Buffer.alloc(0));
        return { id: b.headerSignature, txns: b.transactions.map((t) => t.headerSignature) };
      });
      s.blockIds.put(num, encodeIdRecord(ids));
      s.receipts.put(num, encodeReceipts(receipts));
      done++;
    }
    for (const k of batchIndex.getKeys()) batchIndex.remove(k);
    for (const k of txnIndex.getKeys()) txnIndex.remove(k);
  });
  return done;
}
