/**
 * The query service: what the interfaces read of a ledger (the chain, the state at a
 * head, batch statuses, receipts), as synchronous LMDB reads on the HTTP thread. The
 * interfaces get this, never the stores or the state tree behind it.
 */
import type { RootDatabase } from 'lmdb';
import { StateReader } from '../state/reader.js';
import { IdIndex } from '../store/id-index.js';
import type { StateView } from '../state/state-store.js';
import type { LeafEncoding } from '../state/node.js';
import { openLedgerStores, HEAD, type BatchPos, type ChainHead, type InvalidRecord, type LedgerStores, type TxnPos } from '../store/ledger-stores.js';

/** Where a batch ([block number, index]) and a transaction ([block number, batch index, index]) sit in the chain. */
export type { BatchPos, TxnPos };

export type BatchStatus = 'COMMITTED' | 'INVALID' | 'PENDING' | 'UNKNOWN';

export interface StatusEntry {
  id: string;
  status: BatchStatus;
  invalid_transactions: InvalidRecord['invalid_transactions'];
}

export class LedgerQuery {
  readonly #s: LedgerStores;
  readonly #ids: IdIndex;
  readonly #pending: (id: string) => boolean;
  readonly #fallbackHead: () => ChainHead;
  /** The state as of any stored root; reads served to clients are checked against the node hashes. */
  readonly state: StateView;

  constructor(opts: {
    db: RootDatabase;
    storePrefix: string;
    leafEncoding: LeafEncoding;
    /** Whether a batch is pending (acknowledged, not settled): the pending-pool writer knows. */
    pending(id: string): boolean;
    /** The head as last reported by the committer (before the first block is stored). */
    head(): ChainHead;
    /** Blocks behind the head whose state stays readable (0 or absent: all). */
    stateHistory?: number;
  }) {
    this.#s = openLedgerStores(opts.db, opts.storePrefix);
    this.#ids = new IdIndex(this.#s);
    // At start, not on the first status asked for.
    this.#ids.syncComplete(HEAD.get(this.#s.meta)?.blockNum, `${this.#s.prefix}.block_ids`);
    this.state = new StateReader(this.#s, {
      verify: true,
      leafEncoding: opts.leafEncoding,
      history: opts.stateHistory,
      headNum: () => this.head().blockNum,
    });
    this.#pending = opts.pending;
    this.#fallbackHead = opts.head;
  }

  /** Current head as stored (the same snapshot the reads of this turn use). */
  head(): ChainHead {
    return HEAD.get(this.#s.meta) ?? this.#fallbackHead();
  }

  /** A serialized Block by id. */
  block(id: string): Buffer | undefined {
    return this.#s.blocks.get(id);
  }

  /** The id of block `num` of the chain. */
  blockId(num: number): string | undefined {
    return this.#s.blockByNum.get(num);
  }

  /** Where a committed batch is. */
  batchPos(id: string): BatchPos | undefined {
    return this.#ids.batch(id);
  }

  /** Where a committed transaction is. */
  txnPos(id: string): TxnPos | undefined {
    return this.#ids.txn(id);
  }

  isBatchCommitted(id: string): boolean {
    return this.#ids.hasBatch(id);
  }

  isTxnCommitted(id: string): boolean {
    return this.#ids.hasTxn(id);
  }

  /** Whether a batch was settled INVALID. */
  hasVerdict(id: string): boolean {
    return this.#s.invalid.doesExist(id);
  }

  /** The serialized TransactionReceipt of a committed transaction. */
  receipt(txnId: string): Buffer | undefined {
    return this.#ids.receipt(txnId);
  }

  status(id: string): StatusEntry {
    const s = this.#s;
    if (this.#ids.hasBatch(id)) return { id, status: 'COMMITTED', invalid_transactions: [] };
    if (this.#pending(id)) return { id, status: 'PENDING', invalid_transactions: [] };
    const inv = s.invalid.get(id);
    if (inv) return { id, status: 'INVALID', invalid_transactions: inv.invalid_transactions };
    return { id, status: 'UNKNOWN', invalid_transactions: [] };
  }

  /** A block was written: later reads must see it (drops this thread's read snapshot). */
  refresh(): void {
    this.#s.root.resetReadTxn();
  }
}
