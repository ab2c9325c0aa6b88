/**
 * Composition of a cluster member's ledger committer (workers/committer.ts), registered as
 * `sharedLog` (src/ledger/plugins.ts: a ledger over a shared log runs it): the node
 * ledger's writer and builder, signing with the chain key, the cluster's log as the batch
 * source and the log's order as consensus. No external executor: a transaction processor
 * outside the process could answer differently on each member.
 */
import type { RootDatabase } from 'lmdb';
import type { Signer } from '../crypto/secp256k1.js';
import type { CommitterOptions, FromCommitter } from '../ledger/protocol.js';
import { registerComposition } from '../ledger/plugins.js';
import { loadOrCreateKey } from '../store/keys.js';
import type { BuildEntry } from '../ledger/block-builder.js';
import { Committer } from '../ledger/committer.js';
import { nodeLedgerParts } from '../ledger/compose.js';
import { LogSource } from './log-source.js';
import { LogConsensus } from './consensus.js';

export interface ClusterCommitter {
  committer: Committer<BuildEntry>;
  log: LogSource;
}

export function composeClusterCommitter(
  root: RootDatabase,
  chainSigner: Signer,
  opts: CommitterOptions,
  post: (m: FromCommitter) => void,
): ClusterCommitter {
  const { stores, writer, builder, genesis } = nodeLedgerParts(root, chainSigner, opts, null);
  const log = new LogSource({
    stores,
    ids: writer.ids,
    queueMultiplier: opts.queueMultiplier,
    queueInitialAverage: opts.queueInitialAverage,
    post,
    diverge: opts.sharedLog?.diverge === true,
  });
  const committer = new Committer<BuildEntry>(
    {
      stores,
      writer,
      builder,
      source: log,
      consensus: new LogConsensus(() => log.building),
      genesis,
      executor: null,
      minBlockIntervalMs: opts.minBlockIntervalMs,
      readyInfo: () => ({ pendingIds: [], nextSeq: log.nextRev }),
    },
    post,
  );
  return { committer, log };
}

registerComposition('sharedLog', ({ db, opts, post }) => {
  if (!opts.sharedLog) throw new Error('a shared log committer needs its options (sharedLog)');
  // A cluster member signs its blocks with the chain key: every member writes the same ones.
  const c = composeClusterCommitter(db, loadOrCreateKey(opts.sharedLog.chainKeyFile), opts, post);
  return {
    committer: c.committer,
    envs: [],
    handle: (m) => {
      if (m.type === 'log') c.log.add(m.envelopes);
    },
  };
});
