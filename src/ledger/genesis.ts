/** Genesis: block 0 of a ledger, made on its first start only, as its description says. */
import type { Signer } from '../crypto/secp256k1.js';
import { EMPTY_ROOT } from '../state/merkle.js';
import type { ChainHead } from '../store/ledger-stores.js';
import { proposalPayload, settingsTxnAddresses } from '../families/settings.js';
import { buildBatch, buildTransaction, type BuiltBatch } from './build.js';
import type { GenesisKind } from './description.js';
import type { BlockBuilder } from './block-builder.js';
import { NULL_BLOCK_ID, type ChainWriter } from './chain-writer.js';

/** The batch of block 0. */
export function genesisBatch(signer: Signer, kind: GenesisKind): BuiltBatch {
  if (kind !== 'devmode-settings') throw new Error(`unknown genesis ${String(kind)}`);
  const props: Array<[string, string]> = [
    ['sawtooth.settings.vote.authorized_keys', signer.publicKey],
    ['sawtooth.consensus.algorithm.name', 'Devmode'],
    ['sawtooth.consensus.algorithm.version', '0.1'],
  ];
  const txns = props.map(([k, v]) =>
    buildTransaction(signer, {
      familyName: 'sawtooth_settings',
      familyVersion: '1.0',
      ...settingsTxnAddresses(k),
      payload: proposalPayload(k, v, ''),
      nonce: '',
    }),
  );
  return buildBatch(signer, txns);
}

/** Builds and writes block 0 on an empty chain; resolves with its head once durable. */
export async function makeGenesis(signer: Signer, kind: GenesisKind, builder: BlockBuilder, writer: ChainWriter): Promise<ChainHead> {
  const batch = genesisBatch(signer, kind);
  const entry = { seq: -1, seg: -1, id: batch.id, bytes: batch.bytes, acceptedAt: Date.now() };
  const pre: ChainHead = { blockId: NULL_BLOCK_ID, blockNum: -1, stateRoot: EMPTY_ROOT };
  await writer.writeEmptyRoot();
  const built = builder.build(pre, [entry], {
    max: Infinity,
    consensus: Buffer.from('Genesis'),
    isCommittedTxn: () => false,
    dependencyWaitMs: Infinity,
  });
  if (!built.head || built.invalid.length) throw new Error('genesis batch failed to execute');
  await writer.write(built);
  return built.head;
}
