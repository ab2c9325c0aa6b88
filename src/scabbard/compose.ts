/**
 * Composition of a circuit ledger's committer (workers/committer.ts): the chain writer over
 * the service's own prefixed stores (raw Merkle leaves, the grid read model under the same
 * prefix), the block builder with Sabre over the round reads, the circuit's agreed rounds as
 * the batch source and the agreement as consensus; its initial state holds the admin setting.
 */
import type { RootDatabase } from 'lmdb';
import type { Signer } from '../crypto/secp256k1.js';
import { EMPTY_ROOT, MerkleTree } from '../state/merkle.js';
import type { ChainHead } from '../store/ledger-stores.js';
import { faultPoint } from '../testing/faults.js';
import type { CommitterOptions, FromCommitter } from '../ledger/protocol.js';
import type { CircuitCommitterOptions } from './protocol.js';
import { registerComposition } from '../ledger/plugins.js';
import { projectorEntries } from '../ledger/catalog.js';
import { BlockBuilder, type BuildEntry } from '../ledger/block-builder.js';
import { ChainWriter } from '../ledger/chain-writer.js';
import { Committer } from '../ledger/committer.js';
import { ADMIN_SETTING_ADDRESS, adminSettingValue, scabbardFamilies } from './sabre.js';
import { ROUND, openCircuitStores, scabbardPrefix, type CircuitStores } from './records.js';
import { RoundReads } from './round-reads.js';
import { AgreedRounds } from './round-source.js';
import { AgreementConsensus } from './agreement-consensus.js';

export interface CircuitCommitter {
  committer: Committer<BuildEntry>;
  rounds: AgreedRounds;
  consensus: AgreementConsensus;
}

/**
 * The initial state of a circuit ledger: the admin setting on the empty root, as round 0,
 * written by the chain writer (its Merkle records, the head and the round log's start).
 */
async function initialState(writer: ChainWriter, merkle: CircuitStores['ledger']['merkle'], adminKeys: string[]): Promise<ChainHead> {
  await writer.writeEmptyRoot();
  const tree = new MerkleTree(merkle, { leafEncoding: 'raw' });
  const update = tree.update(EMPTY_ROOT, new Map([[ADMIN_SETTING_ADDRESS, adminSettingValue(adminKeys)]]), []);
  const head: ChainHead = { blockId: `initial-${update.root.slice(0, 16)}`, blockNum: 0, stateRoot: update.root };
  await writer.writeInitialState(head, update.writes, [ROUND.entry({ height: 0, ts: 0 })]);
  return head;
}

export function composeCircuitCommitter(
  root: RootDatabase,
  signer: Signer,
  opts: CommitterOptions,
  c: CircuitCommitterOptions,
  post: (m: FromCommitter) => void,
): CircuitCommitter {
  const prefix = scabbardPrefix(c.circuitId, c.serviceId);
  const stores = openCircuitStores(root, prefix);
  const writer = new ChainWriter({
    stores: stores.ledger,
    leafEncoding: 'raw',
    projectors: projectorEntries(['grid']),
    // A committer started by a recovery runs without the test hook's fault: the hook models one failure.
    writeFault: opts.recovery ? null : faultPoint('circuit.write'),
    readModelPrefix: prefix,
    stallMs: opts.storageStallMs,
  });
  const rounds = new AgreedRounds(stores, c, post);
  const consensus = new AgreementConsensus(rounds, post, `scabbard ${c.circuitId}::${c.serviceId}`);
  const committer = new Committer<BuildEntry>(
    {
      stores: stores.ledger,
      writer,
      builder: new BlockBuilder(new RoundReads(writer.state), signer, scabbardFamilies),
      source: rounds,
      consensus,
      genesis: () => initialState(writer, stores.ledger.merkle, c.adminKeys),
      executor: null,
      minBlockIntervalMs: 0,
      immediateRounds: true,
    },
    post,
  );
  return { committer, rounds, consensus };
}

registerComposition('circuit', ({ db, signer, opts, post }) => {
  const circuit = opts.circuit;
  if (!circuit) throw new Error('a circuit committer needs its options (circuit)');
  const c = composeCircuitCommitter(db, signer, opts, circuit, post);
  return {
    committer: c.committer,
    envs: [],
    handle: (m) => {
      if (m.type === 'intake') c.rounds.add(m.batches);
      else if (m.type === 'propose') c.rounds.propose(m.round);
      else if (m.type === 'decide') c.consensus.decide(m.id, m.finalize, m.pauseMs);
      else if (m.type === 'catch-up') {
        // A member's held proposal is given up: the agreed rounds take its place. (The
        // coordinator's round awaiting its votes is decided first: its agreement waits for it.)
        if (!circuit.coordinator) c.consensus.abandon();
        c.rounds.catchUp(m.from, m.rounds);
      }
    },
  };
});
