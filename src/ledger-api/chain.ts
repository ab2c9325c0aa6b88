/**
 * Read access to the committed chain for the HTTP thread: synchronous LMDB reads, a
 * small LRU of decoded blocks, and an LRU of blocks serialised as the gateway writes them
 * (blocks are immutable, so cached JSON never goes stale). A page of blocks is the
 * concatenation of serialised blocks: each block is serialised once, not once per page.
 */
import { serializer } from '../http/route.js';
import type { Ledger } from '../ledger/ledger.js';
import type { BatchPos, TxnPos } from '../ledger/query.js';
import { blockJson, type BatchJson, type BlockJson, type TxnJson } from './json.js';
import { ledgerError, LedgerErrorCode } from './errors.js';
import { isHexId } from '../codec/hex.js';
import { blockSchema } from './schemas.js';
import { CorruptRecordError } from '../store/alarms.js';

export interface ChainBlock {
  id: string;
  num: number;
  stateRoot: string;
  json: BlockJson;
  /** Every transaction of the block, batches in order (built on first use). */
  txns(): TxnJson[];
}

export interface ResolvedHead {
  id: string;
  num: number;
  stateRoot: string;
}

/**
 * What a reader keeps, in bytes (the node sets them from --memory-budget): stored blocks kept
 * decoded (their decoded form takes a small multiple of this), and serialised block JSON
 * (outside the JS heap, in Buffers; a 100-block page of 1,000-batch blocks is ~26 MB, so the
 * default holds a few such pages).
 */
export interface ChainCaches {
  decodedBytes: number;
  jsonBytes: number;
}

/** The caches of a node with the default budget (256 MiB). */
export const DEFAULT_CACHES: ChainCaches = { decodedBytes: 16 * 1024 * 1024, jsonBytes: 128 * 1024 * 1024 };

const writeBlock = serializer(blockSchema);

export class ChainReader {
  readonly #ledger: Ledger;
  readonly #cache = new Map<string, { block: ChainBlock; size: number }>();
  #size = 0;
  /** Serialised block JSON by block id, least recently used first. */
  readonly #jsonCache = new Map<string, Buffer>();
  #jsonSize = 0;

  readonly #caches: ChainCaches;

  constructor(ledger: Ledger, caches: ChainCaches = DEFAULT_CACHES) {
    this.#ledger = ledger;
    this.#caches = caches;
  }

  get ledger(): Ledger {
    return this.#ledger;
  }

  /** What the caches hold now: bytes and blocks of each (the decoded size counts stored bytes). */
  get cached(): { decodedBytes: number; decodedBlocks: number; jsonBytes: number; jsonBlocks: number } {
    return { decodedBytes: this.#size, decodedBlocks: this.#cache.size, jsonBytes: this.#jsonSize, jsonBlocks: this.#jsonCache.size };
  }

  /** Lookups by id answer undefined for anything that is not an id (it cannot exist, and may not fit an LMDB key). */
  byId(id: string): ChainBlock | undefined {
    if (!isHexId(id)) return undefined;
    const hit = this.#cache.get(id);
    if (hit) {
      this.#cache.delete(id);
      this.#cache.set(id, hit);
      return hit.block;
    }
    const bytes = this.#ledger.query.block(id);
    if (bytes === undefined) return undefined;
    const { json, num } = blockJson(bytes);
    let txns: TxnJson[] | undefined;
    const block: ChainBlock = {
      id,
      num,
      stateRoot: json.header.state_root_hash,
      json,
      txns: () => (txns ??= json.batches.flatMap((b) => b.transactions)),
    };
    this.#cache.set(id, { block, size: bytes.length });
    this.#size += bytes.length;
    for (const [k, v] of this.#cache) {
      if (this.#size <= this.#caches.decodedBytes || this.#cache.size <= 1) break;
      this.#cache.delete(k);
      this.#size -= v.size;
    }
    return block;
  }

  /**
   * Block `num` (of a chain whose head is at least `num`) serialised as the gateway writes
   * a block: the bytes of `writeBlock(at(num).json)`, kept so that pages reuse them.
   */
  jsonAt(num: number): { id: string; bytes: Buffer } {
    const id = this.#ledger.query.blockId(num);
    if (id === undefined) throw new CorruptRecordError('ledger.mdb', `block ${num}`, 'below the head but missing from the block store');
    const hit = this.#jsonCache.get(id);
    if (hit) {
      this.#jsonCache.delete(id);
      this.#jsonCache.set(id, hit);
      return { id, bytes: hit };
    }
    const block = this.byId(id);
    if (!block) throw new CorruptRecordError('ledger.mdb', `block ${num}`, 'below the head but missing from the block store');
    const bytes = Buffer.from(writeBlock(block.json));
    this.#jsonCache.set(id, bytes);
    this.#jsonSize += bytes.length;
    for (const [k, v] of this.#jsonCache) {
      if (this.#jsonSize <= this.#caches.jsonBytes || this.#jsonCache.size <= 1) break;
      this.#jsonCache.delete(k);
      this.#jsonSize -= v.length;
    }
    return { id, bytes };
  }

  byNum(num: number): ChainBlock | undefined {
    const id = this.#ledger.query.blockId(num);
    return id === undefined ? undefined : this.byId(id);
  }

  /** Block `num` of a chain whose head is at least `num` (it exists: the chain has no gaps). */
  at(num: number): ChainBlock {
    const b = this.byNum(num);
    if (!b) throw new CorruptRecordError('ledger.mdb', `block ${num}`, 'below the head but missing from the block store');
    return b;
  }

  current(): ResolvedHead {
    const h = this.#ledger.query.head();
    return { id: h.blockId, num: h.blockNum, stateRoot: h.stateRoot };
  }

  /**
   * The `head` query: the current head when absent (or, on the state routes, empty), or
   * "latest"; a block number; or a block id. A malformed value is 400 code 60; an unknown
   * block is `notFound` (50 on block/batch/transaction lists, 70 on the state routes).
   * Call `checkHead` first where other parameters must be checked before the lookup.
   */
  resolveHead(head: string | null, notFound: 50 | 70): ResolvedHead {
    const ref = checkHead(head, notFound === 70);
    if (ref === 'current') return this.current();
    const block = typeof ref === 'number' ? (ref <= this.current().num ? this.byNum(ref) : undefined) : this.byId(ref);
    if (!block) throw ledgerError(notFound, `: ${head}`);
    return { id: block.id, num: block.num, stateRoot: block.stateRoot };
  }

  batchPos(id: string): BatchPos | undefined {
    if (!isHexId(id)) return undefined;
    return this.#ledger.query.batchPos(id);
  }

  txnPos(id: string): TxnPos | undefined {
    if (!isHexId(id)) return undefined;
    return this.#ledger.query.txnPos(id);
  }

  batchAt(pos: BatchPos): BatchJson {
    return this.at(pos[0]).json.batches[pos[1]]!;
  }

  txnAt(pos: TxnPos): TxnJson {
    return this.at(pos[0]).json.batches[pos[1]]!.transactions[pos[2]]!;
  }

  /** Index of a transaction within its block's flat transaction list. */
  txnOffset(pos: TxnPos): number {
    const batches = this.at(pos[0]).json.batches;
    let o = pos[2];
    for (let i = 0; i < pos[1]; i++) o += batches[i]!.transactions.length;
    return o;
  }
}

/** The form of a `head` query: the current head, a block number or a block id; else 400 code 60. */
export function checkHead(head: string | null, emptyIsCurrent: boolean): 'current' | number | string {
  if (head === null || head === 'latest' || (head === '' && emptyIsCurrent)) return 'current';
  if (isHexId(head)) return head;
  if (/^\d{1,15}$/.test(head)) return Number(head);
  throw ledgerError(LedgerErrorCode.InvalidResourceId, head);
}
