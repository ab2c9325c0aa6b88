/** Pre-signed intkey batch lists for the benchmarks (made before any clock starts): `cairn bench`'s workload (src/bench/workload.ts). */
import { randomPrivateKey } from '../../src/crypto/secp256k1.js';
import { intkeyAddress } from '../../src/families/intkey.js';
import { opOf, signRange, type WorkloadSpec } from '../../src/bench/workload.js';

export interface GenOptions {
  batches: number;
  txnsPerBatch: number;
  signers: number;
  /** 0: every op sets a new key; else ops past the first `keyspace` sets are incs of earlier keys. */
  keyspace: number;
  /** Incs only touch keys set at least this many ops earlier (in submission order). */
  incGap: number;
  /** Prefix of key names, so several runs on one chain do not collide. */
  prefix?: string;
}

export interface GenBatch {
  id: string;
  body: Buffer;
  addresses: string[];
}

export function generateBatches(o: GenOptions): GenBatch[] {
  const spec: WorkloadSpec = {
    prefix: o.prefix ?? 'k',
    txns: o.txnsPerBatch,
    signerKeys: Array.from({ length: o.signers }, () => randomPrivateKey()),
    keyspace: o.keyspace,
    incGap: o.incGap,
    invalidEvery: 0,
  };
  const chunk = signRange(spec, 0, o.batches);
  return chunk.ids.map((id, i) => {
    const start = chunk.offsets[i] as number;
    const end = chunk.offsets[i + 1] as number;
    const addresses = Array.from({ length: o.txnsPerBatch }, (_, j) => intkeyAddress(opOf(spec, i * o.txnsPerBatch + j).name));
    return { id, body: Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset + start, end - start), addresses };
  });
}
