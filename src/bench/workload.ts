/**
 * The intkey workload of `cairn bench`: batch `i` of a run is a pure function of the run's
 * settings and `i`, so worker threads sign disjoint ranges ahead of the clock and the main
 * thread only sends bytes. Names carry the run's prefix, so repeated runs on one chain do not
 * collide (an intkey `set` of a name that exists is invalid).
 */
import { Signer } from '../crypto/secp256k1.js';
import { buildBatch, buildBatchList, buildTransaction } from '../ledger/build.js';
import { intkeyAddress, intkeyPayload } from '../families/intkey.js';

export interface WorkloadSpec {
  prefix: string;
  txns: number;
  /** Private keys (hex) of the signers; batch i is signed by signer i mod n. */
  signerKeys: string[];
  /** 0: every op sets a new name; else ops past the first `keyspace` are incs of earlier names. */
  keyspace: number;
  /** Incs only touch names set at least this many ops earlier (so they are committed by then). */
  incGap: number;
  /** Every `invalidEvery`-th batch (0: none) holds an inc of a name never set: INVALID at commit. */
  invalidEvery: number;
}

export interface SignedChunk {
  ids: string[];
  /** The BatchList bodies, back to back; body k is bytes offsets[k]..offsets[k+1]. */
  bytes: Uint8Array;
  offsets: number[];
}

/** Signers by their keys (each message to a worker carries a fresh copy of the spec). */
const signerCache = new Map<string, Signer[]>();

function signersOf(spec: WorkloadSpec): Signer[] {
  const key = spec.signerKeys.join(',');
  let s = signerCache.get(key);
  if (!s) {
    s = spec.signerKeys.map((k) => new Signer(k));
    if (signerCache.size > 16) signerCache.clear();
    signerCache.set(key, s);
  }
  return s;
}

/** The verb and name of op `op` (the op-th transaction of the run). */
export function opOf(spec: WorkloadSpec, op: number): { verb: string; name: string } {
  const p = spec.prefix;
  if (spec.keyspace > 0 && op >= spec.keyspace && op - spec.incGap > 0) {
    return { verb: 'inc', name: `${p}${(op * 7919) % Math.min(spec.keyspace, op - spec.incGap)}` };
  }
  return { verb: 'set', name: `${p}${op}` };
}

export function signRange(spec: WorkloadSpec, start: number, count: number): SignedChunk {
  const signers = signersOf(spec);
  const ids: string[] = [];
  const bodies: Uint8Array[] = [];
  for (let i = start; i < start + count; i++) {
    const signer = signers[i % signers.length] as Signer;
    const invalid = spec.invalidEvery > 0 && i % spec.invalidEvery === spec.invalidEvery - 1;
    const txns = [];
    for (let j = 0; j < spec.txns; j++) {
      const op = opOf(spec, i * spec.txns + j);
      // The invalid batch's last transaction incs a name no op ever sets.
      const { verb, name } = invalid && j === spec.txns - 1 ? { verb: 'inc', name: `${spec.prefix}x${i}` } : op;
      const address = intkeyAddress(name);
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
    ids.push(b.id);
    bodies.push(buildBatchList([b]));
  }
  const offsets = [0];
  let n = 0;
  for (const b of bodies) {
    n += b.length;
    offsets.push(n);
  }
  const bytes = new Uint8Array(n);
  for (let k = 0; k < bodies.length; k++) bytes.set(bodies[k] as Uint8Array, offsets[k] as number);
  return { ids, bytes, offsets };
}
