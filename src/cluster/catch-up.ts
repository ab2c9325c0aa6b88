/**
 * A cluster member's catch-up from the other members' chains, when the log it has not
 * applied is gone from etcd (deleted by the retention, or compacted from etcd's history):
 * the follower asks it for the blocks after this member's head (GET /cluster/blocks), checks
 * each (the chain key's signature, the parent, the log revision it names, its batches) and
 * hands them to the committer, which must make the same block of each.
 */
import { log } from '../log.js';
import { verify } from '../crypto/secp256k1.js';
import type { ChainHead } from '../store/ledger-stores.js';
import { BlockHeader, decode } from '../proto/index.js';
import { batchIdOf, delimitedFields } from './envelope.js';
import { etcdReason } from './etcd.js';
import { consensusRevision } from './consensus.js';
import type { Handover } from './handover.js';

/** Blocks asked of a member per request when catching up. */
const CATCH_UP_PAGE = 64;
/** Longest wait for a member's blocks (ms). */
const FETCH_TIMEOUT_MS = 10_000;
/** Wait before members that did not answer are asked again (ms). */
const RETRY_MS = 500;

/** A block fetched from a member, checked: what the committer must make of it. */
interface FetchedBlock {
  num: number;
  id: string;
  rev: number;
  batches: Array<{ id: string; bytes: Uint8Array }>;
}

export interface CatchUpOptions {
  /** The chain key's public key: blocks fetched from a member must be signed with it. */
  chainKey: string;
  /** The other live members' ledger gateway URLs (where blocks are fetched from). */
  peers(): string[];
  /** The committer's last durable head. */
  head(): ChainHead;
  /** This member's chain is not the cluster's. */
  diverged(cause: string): void;
  handover: Handover;
  /** Batches known to be in the log at `rev` (pending until applied). */
  track(rev: number, ids: string[]): void;
  /** The follower's read position: the next log revision to read, and a move of it. */
  readNext(): number;
  moveTo(rev: number): void;
  /** `gen` is still the follower's generation; `open`: and the link is not closed. */
  current(gen: number, open: boolean): boolean;
}

export class CatchUp {
  readonly #o: CatchUpOptions;
  /** The last catch-up's reason and position, as logged. */
  #said = '';

  constructor(o: CatchUpOptions) {
    this.#o = o;
  }

  /**
   * Catches up from the other members' chains: fetches the blocks after this member's head,
   * checks each (the chain key's signature, the parent, the log revision it names) and has
   * the committer execute them; each must come out as the same block. Returns once a member
   * has no more blocks (then the log is read from the last revision applied); false when
   * no member answered (tried again).
   */
  async run(gen: number, why: 'deleted' | 'compacted'): Promise<boolean> {
    const o = this.#o;
    // Said once per position: a compaction past every member's position is retried until one passes it.
    const said = `${why} ${o.readNext()}`;
    const again = said === this.#said;
    if (!again)
      log.info(
        why === 'deleted'
          ? `the cluster's log before revision ${o.readNext()} was deleted: catching up from a member's blocks`
          : `etcd's history before revision ${o.readNext()} was compacted: catching up from a member's blocks`,
      );
    this.#said = said;
    for (;;) {
      if (!o.current(gen, true)) return false;
      const tip = o.head();
      const blocks = await this.#fetchBlocks(tip);
      if (blocks === null) {
        log.warn('no member answered with its blocks; trying again');
        await new Promise((r) => setTimeout(r, RETRY_MS));
        return false;
      }
      if (blocks.length === 0) {
        if (!again) log.info(`caught up from the members' blocks at block ${tip.blockNum}; following the log from revision ${o.readNext()}`);
        return true;
      }
      const last = blocks[blocks.length - 1] as FetchedBlock;
      const now = Date.now();
      o.handover.backlog.push(...blocks.map((b) => ({ rev: b.rev, ts: now, batches: b.batches })));
      for (const b of blocks)
        o.track(
          b.rev,
          b.batches.map((x) => x.id),
        );
      o.handover.pump();
      await o.handover.appliedTo(last.rev);
      if (!o.current(gen, false)) return false;
      o.moveTo(last.rev + 1);
      const head = o.head();
      if (head.blockId !== last.id) {
        o.diverged(
          `block ${last.num} fetched from a member is ${last.id.slice(0, 16)}…, this member made ${head.blockId.slice(0, 16)}… of it (block ${head.blockNum})`,
        );
        return false;
      }
    }
  }

  /** The blocks after `tip` from the first member that answers, checked; null if none answered. */
  async #fetchBlocks(tip: ChainHead): Promise<FetchedBlock[] | null> {
    for (const url of this.#o.peers()) {
      let body: Buffer;
      try {
        const r = await fetch(`${url}/cluster/blocks?from=${tip.blockNum + 1}&limit=${CATCH_UP_PAGE}`, {
          signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
        });
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        body = Buffer.from(await r.arrayBuffer());
      } catch (err) {
        log.warn(`blocks from ${url} not fetched: ${etcdReason(err)}`);
        continue;
      }
      try {
        return this.#checkBlocks(body, tip);
      } catch (err) {
        log.warn(`blocks from ${url} refused: ${(err as Error).message}`);
      }
    }
    return null;
  }

  #checkBlocks(body: Buffer, tip: ChainHead): FetchedBlock[] {
    const { chainKey } = this.#o;
    const out: FetchedBlock[] = [];
    let prev = tip.blockId;
    let num = tip.blockNum;
    for (let o = 0; o < body.length; ) {
      if (o + 4 > body.length) throw new Error('truncated reply');
      const len = body.readUInt32BE(o);
      if (o + 4 + len > body.length) throw new Error('truncated reply');
      const bytes = body.subarray(o + 4, o + 4 + len);
      o += 4 + len;
      const fields = delimitedFields(bytes);
      const header = fields?.find((f) => f.field === 1)?.bytes;
      const sig = fields?.find((f) => f.field === 2)?.bytes;
      if (!fields || !header || !sig) throw new Error(`block ${num + 1} is not a Block`);
      const id = Buffer.from(sig).toString('latin1');
      const h = decode(BlockHeader, header);
      num++;
      if (h.signerPublicKey !== chainKey || !verify(id, header, chainKey)) throw new Error(`block ${num} is not signed by the chain key`);
      if (Number(h.blockNum) !== num || h.previousBlockId !== prev) throw new Error(`block ${num} does not follow block ${num - 1}`);
      const rev = consensusRevision(h.consensus);
      if (rev === null) throw new Error(`block ${num} names no log revision`);
      const batches: Array<{ id: string; bytes: Uint8Array }> = [];
      for (const f of fields) {
        if (f.field !== 3) continue;
        const bid = batchIdOf(f.bytes);
        if (bid === null) throw new Error(`block ${num} holds a batch without an id`);
        batches.push({ id: bid, bytes: f.bytes });
      }
      if (batches.map((b) => b.id).join() !== h.batchIds.join()) throw new Error(`block ${num}'s batches are not its header's`);
      out.push({ num, id, rev, batches });
      prev = id;
    }
    return out;
  }
}
