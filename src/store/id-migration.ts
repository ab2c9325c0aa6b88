/**
 * Data directories written before the id records (id-index.ts) kept two indexes keyed by id
 * (`<prefix>.batch_index`, and `<prefix>.txn_index` with each receipt inside). When a ledger
 * whose head block has no id record is loaded, every block that lacks one gets it, built
 * from the block itself and the receipts of the old transaction index, and the old indexes
 * are emptied: all of it in one transaction, so a crash leaves either the old layout or the
 * new one.
 */
import { Block, decode } from '../proto/index.js';
import { encodeIdRecord, encodeReceipts } from './id-index.js';
import { HEAD_KEY, type ChainHead, type LedgerStores } from './ledger-stores.js';
import { ledgerDbNames } from './names.js';

/** Builds the missing id and receipt records; returns how many blocks got them. */
export function migrateIdIndexes(s: LedgerStores): number {
  const head = s.meta.get(HEAD_KEY) as ChainHead | undefined;
  if (!head || s.blockIds.doesExist(head.blockNum)) return 0;
  const n = ledgerDbNames(s.prefix);
  const batchIndex = s.root.openDB<unknown, string>(n.legacyBatchIndex, {});
  const txnIndex = s.root.openDB<[number, number, number, Buffer], string>(n.legacyTxnIndex, {});
  let done = 0;
  s.root.transactionSync(() => {
    for (let num = 0; num <= head.blockNum; num++) {
      if (s.blockIds.doesExist(num)) continue;
      const id = s.blockByNum.get(num);
      const bytes = id === undefined ? undefined : s.blocks.get(id);
      if (!bytes) throw new Error(`block ${num} is missing: the id records cannot be built (run the check command)`);
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
