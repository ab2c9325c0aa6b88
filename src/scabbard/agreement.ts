/**
 * A circuit's agreement on its rounds (upstream's two-phase commit, version 2), on the HTTP
 * thread where the network is. The committer thread executes and writes; this module only
 * exchanges messages: the coordinator proposes the round its committer summarized, collects
 * the members' votes and tells its committer to finalize (APPLY goes out once the round is
 * durable there) or to drop it (REJECT, proposed again after a pause that grows); a member
 * has its committer execute a proposal on its own tip, votes VERIFIED only when the state
 * root and verdicts match and every batch passed the signature checks, and finalizes or
 * drops on the coordinator's result.
 */
import { log } from '../log.js';
import { ConsensusMessage, TwoPhase, TwoPhaseMessage } from '../circuits/proto.js';
import type { RoundSummary, ToCommitter } from '../ledger/protocol.js';
import { MsgType, Proposal, decode, encode, type ProposalMsg, type ScabbardMsg } from './proto.js';
import type { BatchChecks, Forged } from './checks.js';

interface TwoPhaseMsg {
  messageType: number;
  proposalId: Buffer;
  proposalVerificationResponse: number;
  proposalResult: number;
  commitTimeMs: number;
}

/** What the agreement needs of its service. */
export interface AgreementHost {
  readonly serviceId: string;
  readonly coordinator: string;
  readonly peers: string[];
  readonly label: string;
  readonly coordinatorTimeoutMs: number;
  /** A message to the service's committer thread. */
  tell(m: ToCommitter): void;
  send(to: string, msg: Partial<ScabbardMsg> & { messageType: number }): void;
  /** Batches of a round executed and not written yet (status Valid). */
  readonly valid: Set<string>;
  readonly checks: BatchChecks;
  /** This member is behind: fetch the committed rounds it lacks. */
  askCatchUp(coordinatorOnly: boolean): void;
  /** Back-pressure may have changed (the batches in rounds did). */
  pressure(): void;
}

/** A round the coordinator proposes, and its votes. */
interface Coordinating {
  s: RoundSummary;
  verified: Set<string>;
  timer: NodeJS.Timeout;
  /** Summarized while the round before it is written; proposed once that one is applied. */
  unsent: boolean;
}

/** A proposal received (member). */
interface Proposed {
  /** The batches' signature checks, begun when the proposal arrived (null: every batch passed). */
  checked: Promise<Forged | null>;
  height: number;
  ts: number;
  batches: Buffer;
  parentRoot: string;
  root: string;
  verdicts: string;
}

const idBytes = (id: string): Buffer => Buffer.from(id, 'ascii');

export class Agreement {
  #current: Coordinating | null = null;
  /** The coordinator's agreed round being written (its APPLY goes out once it is durable). */
  #applying: Coordinating | null = null;
  #attempts = 0;
  /** Said in the status of a waiting batch: nothing commits while a member cannot agree. */
  note: string | null = null;
  readonly #proposed = new Map<string, Proposed>();
  /** Counts verification requests: a check that ends after a newer request (or the result) is dropped. */
  #gen = 0;
  /** The proposal being verified (member): its summary comes from the committer. */
  #verifying: { id: string; gen: number; summary(s: RoundSummary): void } | null = null;
  /** The member's verified round, waiting for the coordinator's result. */
  #held: RoundSummary | null = null;
  #closed = false;

  constructor(private readonly h: AgreementHost) {}

  get isCoordinator(): boolean {
    return this.h.coordinator === this.h.serviceId;
  }

  /** Batches in the round being agreed and the one being written. */
  get inRounds(): number {
    const size = (c: Coordinating | null): number => (c ? c.s.included.length + c.s.invalid.length : 0);
    return size(this.#current) + size(this.#applying);
  }

  close(): void {
    this.#closed = true;
    if (this.#current) clearTimeout(this.#current.timer);
  }

  // ------------------------------------------------------------------ from the committer

  /** A round the committer executed: the coordinator's to propose, or a member's result. */
  onSummary(s: RoundSummary): void {
    if (this.#closed) return;
    if (this.isCoordinator) return this.#coordinate(s);
    const v = this.#verifying;
    if (v && v.id === s.id) v.summary(s);
    // A summary nothing waits for any more (a newer request or the result came first).
    else if (s.follows) this.h.tell({ type: 'decide', id: s.id, finalize: false });
  }

  /** The committer gave a round up (a catch-up took its place). */
  onDropped(id: string): void {
    if (this.#held?.id === id) this.#release();
    if (this.#current?.s.id === id) this.#reject('a catch-up took its place', false);
  }

  /** A round is durable. */
  onWritten(id: string): void {
    const cur = this.#applying;
    if (!cur || cur.s.id !== id) return;
    this.#applying = null;
    // APPLY only once the round is durable here (a member never gets ahead of the coordinator).
    for (const p of this.h.peers)
      this.#consensus(p, { messageType: TwoPhase.RESULT, proposalId: idBytes(id), proposalResult: TwoPhase.APPLY, commitTimeMs: cur.s.ts });
    this.#attempts = 0;
    this.note = null;
    const next = this.#current;
    if (next?.unsent) this.#propose(next);
  }

  // ------------------------------------------------------------------ coordinator

  #coordinate(s: RoundSummary): void {
    if (!s.follows) return;
    for (const id of s.included) this.h.valid.add(id);
    const timer = setTimeout(() => this.#reject(`no agreement within ${this.h.coordinatorTimeoutMs} ms`), this.h.coordinatorTimeoutMs);
    timer.unref();
    const cur: Coordinating = { s, verified: new Set(), timer, unsent: true };
    this.#current = cur;
    // Proposed once the round before it is applied: members verify it on top of that one.
    if (!this.#applying) this.#propose(cur);
    this.h.pressure();
  }

  #propose(cur: Coordinating): void {
    cur.unsent = false;
    const { id, height, ts, batches, root, verdicts, parentRoot } = cur.s;
    const proposal = encode(Proposal, {
      id: idBytes(id),
      previousId: Buffer.from(parentRoot, 'ascii'),
      proposalHeight: height,
      summary: Buffer.from(root, 'ascii'),
      consensusData: Buffer.from(verdicts, 'ascii'),
    });
    for (const p of this.h.peers) {
      this.h.send(p, {
        messageType: MsgType.PROPOSED_BATCH,
        proposedBatch: {
          proposal: Buffer.from(proposal),
          batch: Buffer.alloc(0),
          serviceId: this.h.serviceId,
          batches: Buffer.from(batches),
          timestampMs: ts,
        },
      });
      this.#consensus(p, { messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: idBytes(id) });
    }
    this.#maybeApply();
  }

  #maybeApply(): void {
    const cur = this.#current;
    if (!cur || cur.unsent || !this.h.peers.every((p) => cur.verified.has(p))) return;
    clearTimeout(cur.timer);
    this.#current = null;
    this.#applying = cur;
    this.h.tell({ type: 'decide', id: cur.s.id, finalize: true });
  }

  #reject(why: string, tellCommitter = true): void {
    const cur = this.#current;
    if (!cur) return;
    clearTimeout(cur.timer);
    this.#current = null;
    for (const id of cur.s.included) this.h.valid.delete(id);
    for (const p of this.h.peers)
      this.#consensus(p, { messageType: TwoPhase.RESULT, proposalId: idBytes(cur.s.id), proposalResult: TwoPhase.REJECT });
    const down = this.h.peers.filter((p) => !cur.verified.has(p));
    this.note = `Waiting for every member to agree (nothing commits while one cannot): round ${cur.s.height} got no agreement from ${down.join(', ') || 'a member'} (${why}); it is proposed again`;
    log.warn(`${this.h.label}: round ${cur.s.height} not agreed (${why}); proposing again`);
    // A rejected round is proposed again (upstream drops it), after a pause that grows.
    const pauseMs = Math.min(2000, 100 * 2 ** this.#attempts++);
    if (tellCommitter) this.h.tell({ type: 'decide', id: cur.s.id, finalize: false, pauseMs });
    this.h.pressure();
  }

  // ------------------------------------------------------------------ messages

  #consensus(to: string, m: Partial<TwoPhaseMsg> & { messageType: number }): void {
    const message = encode(TwoPhaseMessage, m);
    this.h.send(to, {
      messageType: MsgType.CONSENSUS,
      consensusMessage: Buffer.from(encode(ConsensusMessage, { message, originId: Buffer.from(this.h.serviceId, 'ascii') })),
    });
  }

  /** A proposal from the coordinator (member): its signature checks begin now. */
  onProposed(pb: NonNullable<ScabbardMsg['proposedBatch']>): void {
    const p = decode<ProposalMsg>(Proposal, pb.proposal);
    if (this.#proposed.size > 64) this.#proposed.clear();
    this.#proposed.set(p.id.toString('ascii'), {
      // Begun now: the verification request follows at once, and waits for this.
      checked: this.h.checks.encoded(pb.batches),
      height: p.proposalHeight,
      ts: pb.timestampMs,
      batches: pb.batches,
      parentRoot: p.previousId.toString('ascii'),
      root: p.summary.toString('ascii'),
      verdicts: p.consensusData.toString('ascii'),
    });
  }

  onConsensus(from: string, bytes: Buffer): void {
    const cm = decode<{ message: Buffer; originId: Buffer }>(ConsensusMessage, bytes);
    const m = decode<TwoPhaseMsg>(TwoPhaseMessage, cm.message);
    const id = m.proposalId.toString('ascii');
    switch (m.messageType) {
      case TwoPhase.VERIFICATION_REQUEST:
        if (from === this.h.coordinator) this.#verify(id);
        return;
      case TwoPhase.VERIFICATION_RESPONSE: {
        const cur = this.#current;
        if (!cur || cur.s.id !== id) return;
        if (m.proposalVerificationResponse === TwoPhase.VERIFIED) {
          cur.verified.add(from);
          this.#maybeApply();
        } else this.#reject(`${from} could not verify it`);
        return;
      }
      case TwoPhase.RESULT:
        if (from === this.h.coordinator) this.#result(id, m.proposalResult === TwoPhase.APPLY);
        return;
      default:
        return;
    }
  }

  #result(id: string, apply: boolean): void {
    // A result for a proposal still being checked or executed here: that outcome is stale.
    if (this.#verifying?.id === id) {
      this.#gen++;
      this.#verifying = null;
      this.h.tell({ type: 'decide', id, finalize: false });
    }
    const held = this.#held;
    if (held?.id === id) {
      this.#held = null;
      if (!apply) for (const b of held.included) this.h.valid.delete(b);
      this.h.tell({ type: 'decide', id, finalize: apply });
    } else if (apply) {
      // Applied elsewhere but not executed here: fetch what was committed.
      this.h.askCatchUp(true);
    }
  }

  /** Gives up the verified round held here (a newer request, a catch-up). */
  #release(): void {
    const held = this.#held;
    if (!held) return;
    this.#held = null;
    for (const b of held.included) this.h.valid.delete(b);
    this.h.tell({ type: 'decide', id: held.id, finalize: false });
  }

  #verify(id: string): void {
    const answer = (ok: boolean): void =>
      this.#consensus(this.h.coordinator, {
        messageType: TwoPhase.VERIFICATION_RESPONSE,
        proposalId: idBytes(id),
        proposalVerificationResponse: ok ? TwoPhase.VERIFIED : TwoPhase.FAILED,
      });
    this.#release();
    const prev = this.#verifying;
    if (prev) this.h.tell({ type: 'decide', id: prev.id, finalize: false });
    const gen = ++this.#gen;
    this.#verifying = null;
    const p = this.#proposed.get(id);
    if (!p) return answer(false);
    // Executed in the committer thread while every batch's signatures are checked in the
    // verify workers; the vote is VERIFIED only once both agree.
    const summary = new Promise<RoundSummary>((resolve) => {
      this.#verifying = { id, gen, summary: resolve };
    });
    this.h.tell({ type: 'propose', round: { id, height: p.height, ts: p.ts, parentRoot: p.parentRoot, batches: p.batches } });
    void Promise.all([p.checked, summary]).then(([forged, s]) => {
      if (this.#closed || gen !== this.#gen) return;
      this.#verifying = null;
      const refuse = (): void => {
        if (s.follows) this.h.tell({ type: 'decide', id, finalize: false });
        answer(false);
      };
      if (forged) {
        log.warn(`${this.h.label}: round ${p.height}: batch ${forged.id} fails the signature checks (${forged.message}); not verified`);
        return refuse();
      }
      if (!s.follows) {
        if (p.height > s.height + 1) this.h.askCatchUp(true);
        log.warn(`${this.h.label}: round ${p.height} does not follow this member's round ${s.height}; not verified`);
        return refuse();
      }
      if (s.root !== p.root || s.verdicts !== p.verdicts) {
        log.warn(
          `${this.h.label}: round ${p.height} gives root ${s.root.slice(0, 12)}… here, ${p.root.slice(0, 12)}… at the coordinator; not verified`,
        );
        return refuse();
      }
      for (const b of s.included) this.h.valid.add(b);
      this.#held = s;
      this.#proposed.delete(id);
      answer(true);
    });
  }
}
