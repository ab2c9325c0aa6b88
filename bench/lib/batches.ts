/** Pre-signed intkey batch lists for the benchmarks (made before any clock starts). */
import { Signer, randomPrivateKey } from '../../src/crypto/secp256k1.js';
import { buildBatch, buildBatchList, buildTransaction } from '../../src/ledger/build.js';
import { intkeyAddress, intkeyPayload } from '../../src/families/intkey.js';

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
  const signers = Array.from({ length: o.signers }, () => new Signer(randomPrivateKey()));
  const out: GenBatch[] = [];
  const p = o.prefix ?? 'k';
  let op = 0;
  for (let i = 0; i < o.batches; i++) {
    const signer = signers[i % o.signers]!;
    const txns = [];
    const addresses: string[] = [];
    for (let j = 0; j < o.txnsPerBatch; j++, op++) {
      let name = `${p}${op}`;
      let verb = 'set';
      if (o.keyspace > 0 && op >= o.keyspace && op - o.incGap > 0) {
        verb = 'inc';
        name = `${p}${(op * 7919) % Math.min(o.keyspace, op - o.incGap)}`;
      }
      const address = intkeyAddress(name);
      addresses.push(address);
      txns.push(
        buildTransaction(signer, {
          familyName: 'intkey',
          familyVersion: '1.0',
          inputs: [address],
          outputs: [address],
          payload: intkeyPayload(verb, name, 1),
        }),
      );
    }
    const b = buildBatch(signer, txns);
    out.push({ id: b.id, body: Buffer.from(buildBatchList([b])), addresses });
  }
  return out;
}
