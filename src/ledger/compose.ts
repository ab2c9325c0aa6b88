/**
 * Composition of the node's own ledger committer (workers/committer.ts), registered as the
 * default (`node`, plugins.ts): the chain writer over the ledger's stores, the block builder
 * with its families (and the external executor its options enable: the component
 * endpoint's processors), the pending pool as the batch source, and solo consensus.
 */
import type { RootDatabase } from 'lmdb';
import type { Signer } from '../crypto/secp256k1.js';
import { openLedgerStores } from '../store/ledger-stores.js';
import { faultPoint } from '../testing/faults.js';
import { writeFailure } from '../store/errors.js';
import { openPendingEnv } from '../store/db.js';
import type { CommitterOptions, FromCommitter } from './protocol.js';
import type { ExternalExecutor } from './executor.js';
import { DEFAULT_COMPOSITION, executorFor, registerComposition } from './plugins.js';
import { NODE_LEDGER } from './description.js';
import { familyLookup, projectorEntries } from './catalog.js';
import { BlockBuilder } from './block-builder.js';
import { ChainWriter } from './chain-writer.js';
import { makeGenesis } from './genesis.js';
import { PoolSource } from './pool-source.js';
import { SoloConsensus } from './consensus.js';
import { Committer } from './committer.js';
import type { PoolEntry } from './batch-pool.js';

/** The node ledger's committer and the pool it takes durable segments into. */
export class NodeCommitter {
  constructor(
    readonly committer: Committer<PoolEntry>,
    readonly pool: PoolSource,
  ) {}

  init(): Promise<void> {
    return this.committer.init();
  }

  /**
   * Takes batches the HTTP thread has already written, durably, to the pending pool as
   * segment `seg` (batch i has sequence number seg + i).
   */
  enqueue(seg: number, batches: Array<{ id: string; bytes: Uint8Array }>): void {
    this.pool.add(seg, batches);
  }

  close(): Promise<void> {
    return this.committer.close();
  }
}

/** The chain writer and block builder of the node's ledger (a single node's or a cluster member's). */
export function nodeLedgerParts(root: RootDatabase, signer: Signer, opts: CommitterOptions, executor: ExternalExecutor | null) {
  const d = opts.description ?? NODE_LEDGER;
  const stores = openLedgerStores(root, d.storePrefix);
  const writer = new ChainWriter({
    stores,
    leafEncoding: d.leafEncoding,
    projectors: projectorEntries(d.projectors),
    // A committer started by a recovery runs without the test hook's fault: the hook models one failure.
    writeFault: opts.recovery ? null : faultPoint('ledger.write'),
    checkpointEvery: opts.stateCheckpointBlocks,
    checkpointChunk: opts.stateCheckpointChunk,
    checkpointBytes: opts.stateCheckpointBytes,
    stallMs: opts.storageStallMs,
  });
  const builder = new BlockBuilder(writer.state, signer, familyLookup(d.families), executor ?? undefined);
  return { stores, writer, builder, genesis: () => makeGenesis(signer, d.genesis, builder, writer) };
}

export function composeNodeCommitter(
  root: RootDatabase,
  pending: RootDatabase<Buffer, number>,
  signer: Signer,
  opts: CommitterOptions,
  post: (m: FromCommitter) => void,
): NodeCommitter {
  const executor = executorFor(opts, post);
  const { stores, writer, builder, genesis } = nodeLedgerParts(root, signer, opts, executor);
  let committer: Committer<PoolEntry> | null = null;
  const pool = new PoolSource({
    stores,
    ids: writer.ids,
    pending,
    maxBatchesPerBlock: opts.maxBatchesPerBlock,
    dependencyWaitMs: opts.dependencyWaitMs,
    queueMultiplier: opts.queueMultiplier,
    queueInitialAverage: opts.queueInitialAverage,
    onDropFailed: async (err) => committer?.fail('PENDING_CLEANUP_FAILED', `pending pool cleanup failed: ${(await writeFailure(err)).message}`),
  });
  committer = new Committer<PoolEntry>(
    {
      stores,
      writer,
      builder,
      source: pool,
      consensus: new SoloConsensus(),
      genesis,
      executor,
      minBlockIntervalMs: opts.minBlockIntervalMs,
      readyInfo: () => ({ pendingIds: pool.pendingIds, nextSeq: pool.nextSeq }),
    },
    post,
  );
  return new NodeCommitter(committer, pool);
}

registerComposition(DEFAULT_COMPOSITION, ({ db, signer, opts, post }) => {
  const pending = openPendingEnv(opts.dataDir, (opts.description ?? NODE_LEDGER).pendingFile);
  const n = composeNodeCommitter(db, pending, signer, opts, post);
  return {
    committer: n.committer,
    envs: [pending],
    handle: (m) => {
      if (m.type === 'enqueue') n.enqueue(m.seg, m.batches);
      else if (m.type === 'client-send') n.committer.sendClient(m.peer, m.body);
    },
  };
});
