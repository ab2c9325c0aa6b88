/**
 * The block builder: executes batches on top of a head and computes the block they make,
 * without writing anything: a built block (its state root, state records, receipts,
 * verdicts, signed block bytes) is written by the chain writer, or dropped.
 */
import { Batch, BatchHeader, BlockHeader, TransactionHeader, TransactionReceipt, decode, encode, type BatchMsg } from '../proto/index.js';
import type { Signer } from '../crypto/secp256k1.js';
import type { StateStore } from '../state/state-store.js';
import type { ChainHead, InvalidRecord } from '../store/ledger-stores.js';
import { BlockExecutor, type BatchOutcome, type ExternalFamilies, type Receipt, type Unserved } from './executor.js';
import { encodeBlock } from './build.js';
import type { FamilyLookup } from './catalog.js';

/** A batch to build from. */
export interface BuildEntry {
  id: string;
  bytes: Uint8Array;
  /** Pending-pool sequence number (kept in its INVALID verdict). */
  seq: number;
  /** When it was accepted (ms since the epoch): start of its dependency wait. */
  acceptedAt: number;
  /**
   * Tip (block id) at which it last waited on a dependency. Until the tip moves no
   * transaction was committed since, so the batch still waits and is not re-executed.
   * Set by the builder.
   */
  waitTip?: string;
}

/** A block (or a set of verdicts) computed in memory, ready to be written or dropped. */
export interface BuiltBlock<E extends BuildEntry = BuildEntry> {
  /** The head this round was built on: it must still be the stored head when it is written. */
  parent: ChainHead;
  /** The new head; null when no batch was valid (then only verdicts are written). */
  head: ChainHead | null;
  included: Array<{ entry: E; batch: BatchMsg; receipts: Receipt[] }>;
  invalid: Array<{ entry: E; record: InvalidRecord }>;
  /** State records that make the new root readable. */
  merkleWrites: Array<[Buffer, Buffer]>;
  blockBytes: Uint8Array | null;
  /** The block's state changes (address → value, null = deleted), for the read models. */
  stateWrites: Map<string, Uint8Array | null>;
  txnIds: string[];
  buildMs: number;
  /** Batches that wait on a transaction processor this round, with why (see ExternalFamilies). */
  setAside: Array<[string, string]>;
}

export interface BuildOptions {
  /** Batches settled (included or invalid) at most. */
  max: number;
  /** The header's consensus field, or how to make it from the batch ids. */
  consensus: Buffer | ((batchIds: string[]) => Buffer);
  /** Whether a transaction id is already on the chain (or in a block built on it). */
  isCommittedTxn(id: string): boolean;
  /** Entries to pass over (already in a block in flight). */
  skip?(id: string): boolean;
  /** How long a batch may wait for a dependency before it is settled INVALID. */
  dependencyWaitMs: number;
}

export class BlockBuilder {
  constructor(
    private readonly state: StateStore,
    private readonly signer: Signer,
    private readonly families: FamilyLookup,
    /** Families run by transaction processors (src/component); absent, all are native. */
    private readonly external?: ExternalFamilies,
  ) {}

  /**
   * Executes `entries` (in order) on top of `parent`, until `max` of them are settled, and
   * computes the block if any batch is valid. A batch that waits on a dependency is
   * skipped, and settled INVALID once it has waited longer than the dependency wait.
   */
  build<E extends BuildEntry>(parent: ChainHead, entries: Iterable<E>, opts: BuildOptions): BuiltBlock<E> {
    const step = this.#rounds(parent, entries, opts, false).next();
    if (!step.done) throw new Error('an external transaction reached the synchronous build');
    return step.value;
  }

  /**
   * Like build(), with the external families: synchronous until a batch needs a transaction
   * processor, then the rest of the round continues asynchronously (a Promise).
   */
  start<E extends BuildEntry>(parent: ChainHead, entries: Iterable<E>, opts: BuildOptions): BuiltBlock<E> | Promise<BuiltBlock<E>> {
    const steps = this.#rounds(parent, entries, opts, this.external !== undefined);
    const step = steps.next();
    return step.done ? step.value : continueRound(steps, step.value);
  }

  *#rounds<E extends BuildEntry>(
    parent: ChainHead,
    entries: Iterable<E>,
    opts: BuildOptions,
    withExternal: boolean,
  ): Generator<Promise<BatchOutcome | 'wait' | Unserved>, BuiltBlock<E>, BatchOutcome | 'wait' | Unserved> {
    const tStart = performance.now();
    const now = Date.now();
    const exec = new BlockExecutor({ get: (a) => this.state.get(parent.stateRoot, a) }, this.families, withExternal ? this.external : undefined);
    const built: BuiltBlock<E> = {
      parent,
      head: null,
      included: [],
      invalid: [],
      merkleWrites: [],
      blockBytes: null,
      stateWrites: exec.writes,
      txnIds: [],
      buildMs: 0,
      setAside: [],
    };
    const committed = opts.isCommittedTxn;
    const waitMs = opts.dependencyWaitMs;
    for (const entry of entries) {
      if (built.included.length + built.invalid.length >= opts.max) break;
      if (opts.skip?.(entry.id)) continue;
      const expired = now - entry.acceptedAt >= waitMs;
      if (entry.waitTip === parent.blockId && !expired) continue;
      const batch = readBatch(entry.bytes);
      if (typeof batch === 'string') {
        built.invalid.push({ entry, record: { invalid_transactions: [{ id: '', message: batch, extended_data: '' }], seq: entry.seq } });
        continue;
      }
      let outcome = exec.executeBatch(batch, committed);
      if (outcome === 'async') outcome = yield exec.executeBatchAsync(batch, committed);
      if (outcome !== 'wait' && 'unserved' in outcome) {
        // No processor serves its family (or none could finish it): it waits like a batch
        // with a missing dependency, re-tried every round, and expires the same way.
        if (!expired) {
          built.setAside.push([entry.id, outcome.unserved]);
          continue;
        }
        const message =
          `No transaction processor for ${outcome.unserved} finished the transaction within ` +
          `${Math.round(waitMs / 1000)} s of the batch's acceptance`;
        const first = batch.transactions[0]?.headerSignature ?? '';
        built.invalid.push({ entry, record: { invalid_transactions: [{ id: first, message, extended_data: '' }], seq: entry.seq } });
        continue;
      }
      if (outcome === 'wait') {
        if (!expired) {
          entry.waitTip = parent.blockId;
          continue;
        }
        const missing = missingDependency(batch, (id) => exec.txnIds.has(id) || committed(id));
        const message =
          `Dependency ${missing.dependency} of transaction ${missing.txnId} was not committed within ` +
          `${Math.round(waitMs / 1000)} s of the batch's acceptance`;
        built.invalid.push({ entry, record: { invalid_transactions: [{ id: missing.txnId, message, extended_data: '' }], seq: entry.seq } });
        continue;
      }
      if (outcome.ok) {
        built.included.push({ entry, batch, receipts: outcome.receipts });
        for (const t of batch.transactions) built.txnIds.push(t.headerSignature);
      } else {
        const t = outcome.invalid;
        built.invalid.push({
          entry,
          record: {
            invalid_transactions: [{ id: t.id, message: t.message, extended_data: Buffer.from(t.extendedData).toString('base64') }],
            seq: entry.seq,
          },
        });
      }
    }
    if (built.included.length > 0) {
      const sets = new Map<string, Uint8Array>();
      const deletes: string[] = [];
      for (const [a, v] of exec.writes) {
        if (v) sets.set(a, v);
        else deletes.push(a);
      }
      const update = this.state.update(parent.stateRoot, sets, deletes);
      built.merkleWrites = update.writes;
      const batchIds = built.included.map((i) => i.entry.id);
      const blockNum = parent.blockNum + 1;
      const headerBytes = encode(BlockHeader, {
        blockNum,
        previousBlockId: parent.blockId,
        signerPublicKey: this.signer.publicKey,
        batchIds,
        consensus: typeof opts.consensus === 'function' ? opts.consensus(batchIds) : opts.consensus,
        stateRootHash: update.root,
      });
      const blockId = this.signer.sign(headerBytes);
      built.blockBytes = encodeBlock(
        headerBytes,
        blockId,
        built.included.map((i) => i.entry.bytes),
      );
      built.head = { blockId, blockNum, stateRoot: update.root };
    }
    built.buildMs = performance.now() - tStart;
    return built;
  }
}

/**
 * A batch as stored, or why it cannot be executed. A batch that came in through a
 * submission was checked whole there; one a cluster member packed without these checks
 * (the chain's trust mode: the others do not verify its batches again) is checked here for
 * what executing it and serving it need: it decodes, its header decodes, and the header
 * lists the transactions it holds. Deterministic: every member that executes it finds the
 * same. One that failed to decode stopped the committer of every member at that log
 * entry, again at each restart. Cost: about 1 µs a batch (the header's decode).
 */
function readBatch(bytes: Uint8Array): BatchMsg | string {
  let batch: BatchMsg;
  let ids: string[];
  try {
    batch = decode(Batch, bytes);
    ids = decode(BatchHeader, batch.header).transactionIds;
  } catch (err) {
    return `The batch does not decode (${err instanceof Error ? err.message : String(err)})`;
  }
  if (ids.length !== batch.transactions.length || batch.transactions.some((t, i) => t.headerSignature !== ids[i]))
    return "The batch header's transaction ids are not those of its transactions";
  return batch;
}

/** Runs the rest of a round that went asynchronous, feeding each outcome back in. */
async function continueRound<E extends BuildEntry>(
  steps: Generator<Promise<BatchOutcome | 'wait' | Unserved>, BuiltBlock<E>, BatchOutcome | 'wait' | Unserved>,
  first: Promise<BatchOutcome | 'wait' | Unserved>,
): Promise<BuiltBlock<E>> {
  let pending = first;
  for (;;) {
    const step = steps.next(await pending);
    if (step.done) return step.value;
    pending = step.value;
  }
}

/** The first dependency of `batch` that is neither earlier in the batch nor `known`. */
function missingDependency(batch: BatchMsg, known: (txnId: string) => boolean): { txnId: string; dependency: string } {
  const earlier = new Set<string>();
  for (const t of batch.transactions) {
    const h = decode(TransactionHeader, t.header);
    for (const dep of h.dependencies) if (!earlier.has(dep) && !known(dep)) return { txnId: t.headerSignature, dependency: dep };
    earlier.add(t.headerSignature);
  }
  const first = batch.transactions[0]?.headerSignature ?? '';
  return { txnId: first, dependency: 'unknown' };
}

/**
 * A receipt as a block's receipts record stores it: without its transaction id, which the
 * lookup that finds it knows and appends (IdIndex.receipt).
 */
export function encodeStoredReceipt(r: Receipt): Uint8Array {
  return encode(TransactionReceipt, {
    stateChanges: r.stateChanges,
    events: r.events.map((e) => ({ eventType: e.eventType, attributes: e.attributes, data: e.data })),
    data: r.data,
  });
}
