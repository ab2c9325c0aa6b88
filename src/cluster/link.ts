/**
 * A cluster member's end of the log, on the HTTP thread: the AckWriter the ledger's ingest
 * writes to in place of the pending pool, and the committer's source of log envelopes. It
 * wires the parts, each of one job:
 * - acknowledgements.ts packs verified batches into signed envelopes and appends them to the
 *   log in etcd, answering only once etcd has committed them (the 202);
 * - log-follower.ts follows the log from the revision the committer last applied; each entry
 *   is checked by entry-checks.ts (a registered member's signature, member-roll.ts, a
 *   readable layout) and goes to block-cutter.ts, which ends the blocks and hands them, in
 *   order, to the committer (handover.ts); catch-up.ts fetches the members' blocks when the
 *   log it needs is gone from etcd;
 * - tip-reads.ts has status reads wait until the log is read as far as etcd holds it;
 * - pending.ts knows which batches are pending: in the log, not applied here.
 */
import type { Etcd3 } from 'etcd3';
import type { Signer } from '../crypto/secp256k1.js';
import type { ToCommitter } from '../ledger/protocol.js';
import type { AckWriter } from '../ledger/ack-writer.js';
import type { ChainHead } from '../store/ledger-stores.js';
import type { VerifyResult } from '../ledger/verify.js';
import { CHAIN_KEY } from './etcd.js';
import { Acknowledgements } from './acknowledgements.js';
import { BlockCutter, blockLinger, type BlockLinger } from './block-cutter.js';
import { CatchUp } from './catch-up.js';
import { EntryChecks } from './entry-checks.js';
import { Handover } from './handover.js';
import { LogFollower } from './log-follower.js';
import { MemberRoll } from './member-roll.js';
import { PendingBatches } from './pending.js';
import { TipReads } from './tip-reads.js';

export { APPEND_SPACING_MS, ENVELOPE_MAX_BATCHES, ENVELOPE_MAX_BYTES } from './acknowledgements.js';

export interface ClusterLinkOptions {
  client: Etcd3;
  /** The node's key: it signs this member's envelopes. */
  signer: Signer;
  /** Next log revision to read (the committer's: the last one applied + 1). */
  nextRev: number;
  tell(m: ToCommitter): void;
  /** Null while batches may be acknowledged; else the message of the 503. */
  refusal(): string | null;
  /**
   * Every member re-verifies every batch (the chain's --verify all): the verify pool's check
   * of BatchList bodies. Null: the ingesting member's checks are trusted.
   */
  verify: ((bodies: Uint8Array[]) => Promise<VerifyResult[]>) | null;
  /** The chain key's public key: blocks fetched from a member must be signed with it. */
  chainKey: string;
  /** The other live members' ledger gateway URLs (where blocks are fetched from). */
  peers(): string[];
  /** The committer's last durable head. */
  head(): ChainHead;
  /** This member's chain is not the cluster's. */
  diverged(cause: string): void;
  /** Test hook: the read-ahead bound in blocks (log-follower.ts). */
  readAheadBlocks?: number;
  /**
   * Test hook: the first watch stalls after this many entries (its stream stays open); what
   * it carries after them is delivered once the follower has started again.
   */
  deafWatchAfter?: number;
  /** The spacing of this member's appends per appending member (ms; APPEND_SPACING_MS unless set). */
  appendSpacingMs: number;
  /** The block's linger (ms; block-cutter.ts BLOCK_LINGER for what is not set). */
  linger?: Partial<BlockLinger>;
}

export class ClusterLink implements AckWriter {
  readonly #roll: MemberRoll;
  readonly #handover: Handover;
  readonly #pending: PendingBatches;
  readonly #cutter: BlockCutter;
  readonly #acks: Acknowledgements;
  readonly #tips: TipReads;
  readonly #follower: LogFollower;
  readonly #client: Etcd3;
  #closed = false;

  constructor(o: ClusterLinkOptions) {
    const { client, signer } = o;
    this.#client = client;
    const closed = (): boolean => this.#closed;
    // The parts ask the follower (made last) for its position and generation only once it runs.
    const current = (gen: number): boolean => gen === this.#follower.generation;
    this.#roll = new MemberRoll(client, o.chainKey, signer.publicKey);
    this.#handover = new Handover(o.tell, closed, o.nextRev);
    this.#pending = new PendingBatches(() => this.#handover.applied);
    this.#cutter = new BlockCutter({
      client,
      signer,
      handover: this.#handover,
      linger: blockLinger(o.linger),
      current: (gen) => current(gen) && !this.#closed,
    });
    this.#acks = new Acknowledgements({
      client,
      signer,
      refusal: o.refusal,
      removedAt: () => this.#roll.removedAt,
      pending: this.#pending,
      cutter: this.#cutter,
      appendSpacingMs: o.appendSpacingMs,
    });
    const track = (rev: number, ids: string[]): void => this.#pending.track(rev, ids);
    const checks = new EntryChecks({
      roll: this.#roll,
      cutter: this.#cutter,
      chainKey: o.chainKey,
      verify: o.verify,
      sawAppend: (s) => this.#acks.sawAppend(s),
      track,
      current,
    });
    const catchUp = new CatchUp({
      chainKey: o.chainKey,
      peers: o.peers,
      head: o.head,
      diverged: o.diverged,
      handover: this.#handover,
      track,
      readNext: () => this.#follower.readNext,
      moveTo: (rev) => this.#follower.moveTo(rev),
      current: (gen, open) => current(gen) && !(open && this.#closed),
    });
    this.#tips = new TipReads({ client, readNext: () => this.#follower.readNext, order: () => this.#follower.order, closed });
    this.#follower = new LogFollower({
      client,
      nextRev: o.nextRev,
      handover: this.#handover,
      cutter: this.#cutter,
      roll: this.#roll,
      tips: this.#tips,
      check: (kv, rev, value, gen) => checks.check(kv, rev, value, gen),
      catchUp: (gen, why) => catchUp.run(gen, why),
      refusal: o.refusal,
      closed,
      ...(o.readAheadBlocks !== undefined ? { readAheadBlocks: o.readAheadBlocks } : {}),
      ...(o.deafWatchAfter !== undefined ? { deafWatchAfter: o.deafWatchAfter } : {}),
    });
  }

  /** Starts following the log. */
  start(): void {
    this.#follower.start();
  }

  get size(): number {
    return this.#pending.size;
  }

  /**
   * The last log revision applied here, the last one durable here (a restart reads the log
   * from the revision after it), and the newest revision etcd has shown.
   */
  get position(): { applied: number; durable: number; seen: number } {
    const { applied, durable } = this.#handover;
    return { applied, durable, seen: Math.max(applied, this.#follower.readNext - 1) };
  }

  has(id: string): boolean {
    return this.#pending.has(id);
  }

  isWriting(id: string): boolean {
    return this.#acks.isWriting(id);
  }

  settle(id: string): void {
    this.#pending.settle(id);
  }

  /** The members taken out of the cluster, and the log revision of each removal. */
  get removed(): ReadonlyMap<string, number> {
    return this.#roll.removed;
  }

  /** This member's key was taken out of the cluster (at that log revision), or null. */
  get removedAt(): number | null {
    return this.#roll.removedAt;
  }

  /** Appends the batches to the log; resolves once etcd has committed the envelope holding them. */
  persist(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    return this.#acks.persist(batches);
  }

  /**
   * The committer applied the log up to `rev`: a round, durable (its transaction records the
   * revision), or entries that added nothing (applied as they are: a member that restarts
   * reads them again).
   */
  applied(rev: number, durable: boolean): void {
    if (!this.#handover.noteApplied(rev, durable)) return;
    this.#pending.appliedUpTo(rev);
    this.#handover.appliedUpTo(rev);
  }

  /**
   * Resolves once this member has read every log entry etcd holds now (or after
   * `timeoutMs`, or at once when etcd does not answer): a status read after it is as
   * fresh as the log.
   */
  readThrough(timeoutMs: number): Promise<void> {
    return this.#tips.readThrough(timeoutMs);
  }

  /** Appends in progress settle (a recovery restarts the committer after them). */
  async drain(): Promise<void> {
    await this.#acks.drain();
  }

  /** A new committer took over at `nextRev`: the log is read again from there. */
  reset(_pendingIds: readonly string[], nextRev: number): void {
    this.#handover.reset(nextRev);
    this.#follower.readAgainFrom(nextRev);
    this.#handover.releaseWaits(true);
  }

  /** etcd answers a read (a recovery's check that acknowledgements may resume). */
  async probe(): Promise<void> {
    await this.#client.get(CHAIN_KEY).string();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#handover.releaseWaits(true);
    this.#tips.release(true);
    this.#follower.stop();
    this.#cutter.close();
    await this.#acks.close();
    await this.#follower.close();
  }
}
