/**
 * Composition of the node's own ledger committer (workers/committer.ts): the chain writer
 * over the ledger's stores, the block builder with its families (and the component
 * endpoint, when enabled), the pending pool as the batch source, and solo consensus.
 */
import type { RootDatabase } from 'lmdb';
import type { Signer } from '../crypto/secp256k1.js';
import { openLedgerStores } from '../store/ledger-stores.js';
import { faultPoint } from '../testing/faults.js';
import { writeFailure } from '../store/errors.js';
import { ComponentServer } from '../component/server.js';
import type { CommitterOptions, FromCommitter } from './protocol.js';
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
export function nodeLedgerParts(root: RootDatabase, signer: Signer, opts: CommitterOptions, component: ComponentServer | null) {
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
    stallMs: opts.storageStallMs,
  });
  const builder = new BlockBuilder(writer.state, signer, familyLookup(d.families), component ?? undefined);
  return { stores, writer, builder, genesis: () => makeGenesis(signer, d.genesis, builder, writer) };
}

export function composeNodeCommitter(
  root: RootDatabase,
  pending: RootDatabase<Buffer, number>,
  signer: Signer,
  opts: CommitterOptions,
  post: (m: FromCommitter) => void,
): NodeCommitter {
  const component = opts.component
    ? new ComponentServer(
        opts.component,
        {
          message: (peer, body) => post({ type: 'client', peer, body }),
          gone: (peer, why) => post({ type: 'client-gone', peer, why }),
        },
        (report) => post({ type: 'processors', report }),
      )
    : null;
  const { stores, writer, builder, genesis } = nodeLedgerParts(root, signer, opts, component);
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
      component,
      minBlockIntervalMs: opts.minBlockIntervalMs,
      readyInfo: () => ({ pendingIds: pool.pendingIds, nextSeq: pool.nextSeq }),
    },
    post,
  );
  return new NodeCommitter(committer, pool);
}
