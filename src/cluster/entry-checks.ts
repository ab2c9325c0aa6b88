/**
 * The checks of each entry the follower takes from the cluster's log, one at a time in log
 * order: a removal signed by the chain key, a cut or an envelope signed by a registered
 * member (member-roll.ts) with a readable layout, and with `--verify all` every batch of an
 * envelope checked again by this member's verify pool. What passes goes to the block cutter;
 * garbage and forged entries are refused on every member alike (passed over: the position
 * moves past them).
 */
import type { IKeyValue } from 'etcd3';
import { log } from '../log.js';
import type { VerifyResult } from '../ledger/verify.js';
import type { LogEnvelope } from './protocol.js';
import { decodeCut, decodeEnvelope, decodeRemoval, EnvelopeError, isCut, isRemoval } from './envelope.js';
import type { MemberRoll } from './member-roll.js';
import type { BlockCutter } from './block-cutter.js';

export interface EntryChecksOptions {
  roll: MemberRoll;
  cutter: BlockCutter;
  /** The chain key's public key: a removal counts only when it signed it. */
  chainKey: string;
  /**
   * Every member re-verifies every batch (the chain's --verify all): the verify pool's check
   * of BatchList bodies. Null: the ingesting member's checks are trusted.
   */
  verify: ((bodies: Uint8Array[]) => Promise<VerifyResult[]>) | null;
  /** An envelope of `signer` was read now (the acknowledgements count the members appending). */
  sawAppend(signer: string): void;
  /** Batches known to be in the log at `rev` (pending until applied). */
  track(rev: number, ids: string[]): void;
  /** `gen` is still the follower's generation (a check that outlived a restart stops). */
  current(gen: number): boolean;
}

/** A BatchList of one batch: field 1, length-delimited. */
function batchListOf(batch: Uint8Array): Uint8Array {
  const len: number[] = [];
  for (let v = batch.length; ; v = Math.floor(v / 128)) {
    if (v < 128) {
      len.push(v);
      break;
    }
    len.push((v % 128) | 128);
  }
  return Buffer.concat([Buffer.from([0x0a, ...len]), batch]);
}

export class EntryChecks {
  readonly #o: EntryChecksOptions;

  constructor(o: EntryChecksOptions) {
    this.#o = o;
  }

  /** One log entry taken, in order: checked, then added to the open block (or passed over). */
  async check(kv: IKeyValue, rev: number, value: Buffer, gen: number): Promise<void> {
    const { roll, cutter } = this.#o;
    if (!this.#o.current(gen)) return;
    const signer = value.length >= 37 ? value.toString('hex', 4, 37) : '';
    if (signer && !roll.isMember(signer, rev)) {
      await roll.load().catch(() => undefined);
      if (!this.#o.current(gen)) return;
    }
    const known = (s: string): boolean => roll.isMember(s, rev);
    const refuse = (err: unknown): void => {
      const why = err instanceof EnvelopeError ? err.message : String(err);
      log.warn(`cluster log entry at revision ${rev} (${kv.key.toString()}) refused: ${why}`);
      // Passed over on every member alike: the position moves past it.
      cutter.passOver(rev);
    };
    if (isRemoval(value)) {
      try {
        roll.noteRemoval(decodeRemoval(value, this.#o.chainKey), rev);
      } catch (err) {
        refuse(err);
        return;
      }
      cutter.passOver(rev);
      return;
    }
    if (isCut(value)) {
      let target: number;
      try {
        target = decodeCut(value, known).target;
      } catch (err) {
        refuse(err);
        return;
      }
      cutter.cut(target, rev);
      return;
    }
    let env: LogEnvelope & { signer: string };
    let closes: number;
    try {
      const e = decodeEnvelope(value, known);
      env = { rev, ts: e.ts, batches: e.batches, signer: e.signer };
      closes = e.closes;
    } catch (err) {
      refuse(err);
      return;
    }
    this.#o.sawAppend(env.signer);
    if (this.#o.verify && env.batches.length > 0) {
      env = { ...(await this.#verified(env, kv.key.toString())), signer: env.signer };
      if (!this.#o.current(gen)) return;
    }
    if (env.batches.length === 0) {
      cutter.mark(closes, rev);
      return;
    }
    this.#o.track(
      rev,
      env.batches.map((b) => b.id),
    );
    cutter.add(env, closes, gen);
  }

  /**
   * The envelope less the batches that fail this member's own checks (signatures, structure,
   * families): every member that re-verifies drops the same ones. A member whose checks
   * cannot run (the pool failed) stops reading here and tries again.
   */
  async #verified(env: LogEnvelope, key: string): Promise<LogEnvelope> {
    const verify = this.#o.verify;
    if (!verify) return env;
    const results = await verify(env.batches.map((b) => batchListOf(b.bytes)));
    const kept = env.batches.filter((b, i) => {
      const r = results[i];
      const ok = r?.ok === true && r.batches.length === 1 && r.batches[0]?.id === b.id;
      if (!ok)
        log.warn(
          `batch ${b.id.slice(0, 16)}… of log entry ${key} (revision ${env.rev}) fails this member's checks: ${r && !r.ok ? r.message : 'id mismatch'}; dropped`,
        );
      return ok;
    });
    return kept.length === env.batches.length ? env : { ...env, batches: kept };
  }
}
