/**
 * A circuit's agreement on its rounds (upstream's two-phase commit, version 2) on the HTTP
 * thread, where the network is, run by the shared two-phase machine
 * (src/consensus/two-phase.ts). The committer thread executes and writes; this module only
 * exchanges messages: the coordinator proposes the round its committer summarized, and once
 * every member verified it tells its committer to finalize it (APPLY goes out once the round
 * is durable there) or to drop it (REJECT; proposed again after a pause that grows); a
 * member has its committer execute a proposal on its own tip, votes VERIFIED only when the
 * state root and verdicts match and every batch passed the signature checks, and finalizes
 * or drops the round on the coordinator's result.
 */
import { log } from '../log.js';
import { TwoPhaseCommit, decodeConsensus, encodeConsensus } from '../consensus/two-phase.js';
import { ownBytes, type ToCommitter } from '../ledger/protocol.js';
import type { RoundSummary } from './protocol.js';
import { MsgType, Proposal, decode, encode, type ProposalMsg, type ScabbardMsg } from './proto.js';
import type { BatchChecks, Forged } from './checks.js';

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

/** A round of the machine: the coordinator's own (summarized here) or a proposal received. */
interface Round {
  id: string;
  height: number;
  ts: number;
  /** Coordinator: its committer's summary. */
  own?: RoundSummary;
  /** Member: the proposal as received, and its signature checks (begun when it arrived). */
  proposed?: { checked: Promise<Forged | null>; batches: Buffer; parentRoot: string; root: string; verdicts: string };
  /** Member: the committer's result, once verified. */
  held?: RoundSummary;
  /** The round ended here: a late result of its execution is dropped. */
  ended?: boolean;
}

/** What a verification waiting for its execution gets when the committer cannot answer. */
const NOT_EXECUTED: RoundSummary = {
  type: 'summary',
  follows: false,
  id: '',
  height: 0,
  ts: 0,
  parentRoot: '',
  batches: Buffer.alloc(0),
  root: '',
  verdicts: '',
  included: [],
  invalid: [],
};

export class Agreement {
  readonly #h: AgreementHost;
  readonly #tp: TwoPhaseCommit<Round>;
  /** The coordinator's rounds being applied: resolved with the round's time once durable. */
  readonly #writing = new Map<string, { done(ts: number): void; lost(err: Error): void }>();
  /** Member: the committer's summaries awaited, by round id. */
  readonly #summaries = new Map<string, (s: RoundSummary) => void>();
  /** Batches in the coordinator's rounds known to the machine (proposed, being agreed or applied). */
  readonly #inRounds = new Map<string, number>();
  #attempts = 0;
  /** Said in the status of a waiting batch: nothing commits while a member cannot agree. */
  note: string | null = null;
  #closed = false;

  constructor(h: AgreementHost) {
    this.#h = h;
    this.#tp = new TwoPhaseCommit<Round>({
      self: h.serviceId,
      send: (to, msg) => h.send(to, { messageType: MsgType.CONSENSUS, consensusMessage: Buffer.from(encodeConsensus(h.serviceId, msg)) }),
      verify: (r, { role }) => (role === 'coordinator' ? Promise.resolve(true) : this.#verify(r)),
      apply: (r, { role }) => this.#apply(r, role === 'coordinator'),
      reject: (r, why, { role }) => this.#rejected(r, why, role === 'coordinator'),
      settled: (r, { applied }) => {
        this.#inRounds.delete(r.id);
        if (applied && r.own) {
          this.#attempts = 0;
          this.note = null;
        }
        h.pressure();
      },
      behind: () => h.askCatchUp(true),
      coordinatorTimeoutMs: h.coordinatorTimeoutMs,
      // After VERIFIED a member waits this long for the result (the coordinator waits for the others first).
      participantTimeoutMs: 2 * h.coordinatorTimeoutMs,
      // A request for a proposal not received is answered FAILED at once (upstream's answer).
      earlyRequests: 0,
    });
  }

  get isCoordinator(): boolean {
    return this.#h.coordinator === this.#h.serviceId;
  }

  /** Batches in the coordinator's rounds being agreed or written. */
  get inRounds(): number {
    let n = 0;
    for (const v of this.#inRounds.values()) n += v;
    return n;
  }

  close(): void {
    this.#closed = true;
    this.#tp.close();
    this.committerLost();
  }

  #verifiers(): string[] {
    return [this.#h.serviceId, ...this.#h.peers];
  }

  // ------------------------------------------------------------------ from the committer

  /** A round the committer executed: the coordinator's to propose, or a member's result. */
  onSummary(s: RoundSummary): void {
    const waiting = this.#summaries.get(s.id);
    if (waiting) {
      this.#summaries.delete(s.id);
      return waiting(s);
    }
    if (!this.isCoordinator || !s.follows) {
      // A result nothing waits for any more (the round ended first): the committer drops it.
      if (s.follows) this.#h.tell({ type: 'decide', id: s.id, finalize: false });
      return;
    }
    for (const id of s.included) this.#h.valid.add(id);
    this.#inRounds.set(s.id, s.included.length + s.invalid.length);
    const proposal = encode(Proposal, {
      id: Buffer.from(s.id, 'ascii'),
      previousId: Buffer.from(s.parentRoot, 'ascii'),
      proposalHeight: s.height,
      summary: Buffer.from(s.root, 'ascii'),
      consensusData: Buffer.from(s.verdicts, 'ascii'),
    });
    // Sent now (members begin its signature checks); the machine asks for the votes once
    // the round before it is applied, so that members verify it on top of that one.
    for (const p of this.#h.peers)
      this.#h.send(p, {
        messageType: MsgType.PROPOSED_BATCH,
        proposedBatch: {
          proposal: Buffer.from(proposal),
          batch: Buffer.alloc(0),
          serviceId: this.#h.serviceId,
          batches: Buffer.from(s.batches),
          timestampMs: s.ts,
        },
      });
    this.#tp.add(s.id, { id: s.id, height: s.height, ts: s.ts, own: s }, this.#verifiers(), this.#h.coordinator);
    this.#h.pressure();
  }

  /**
   * The committer does not hold a round any more (a catch-up took its place, or its thread
   * was restarted): a member's is not verified any more; the coordinator's is not applied
   * (REJECT goes out, and it is built again).
   */
  onDropped(id: string): void {
    const w = this.#writing.get(id);
    this.#writing.delete(id);
    w?.lost(new Error('the committer thread does not hold it any more'));
    for (const { id: rid, proposal } of this.#tp.proposals()) {
      if (rid !== id || !proposal.held) continue;
      for (const b of proposal.held.included) this.#h.valid.delete(b);
      proposal.held = undefined;
      proposal.ended = true;
      this.#h.askCatchUp(true);
    }
  }

  /**
   * The committer thread stopped: rounds being applied are not, and a verification waiting
   * for its execution fails (the service starts a new thread).
   */
  committerLost(): void {
    for (const w of this.#writing.values()) w.lost(new Error('the committer thread stopped'));
    this.#writing.clear();
    const waiting = [...this.#summaries.values()];
    this.#summaries.clear();
    for (const r of waiting) r(NOT_EXECUTED);
  }

  /** A round is durable here. */
  onWritten(id: string, ts: number): void {
    const w = this.#writing.get(id);
    this.#writing.delete(id);
    w?.done(ts);
  }

  // ------------------------------------------------------------------ the machine's calls

  #apply(r: Round, coordinator: boolean): Promise<number | undefined> {
    if (coordinator) {
      // APPLY goes out once the round is durable here (a member never gets ahead of the coordinator).
      const durable = new Promise<number>((done, lost) => this.#writing.set(r.id, { done, lost }));
      this.#h.tell({ type: 'decide', id: r.id, finalize: true });
      return durable;
    }
    if (!r.held || r.ended) {
      // Applied by the others but not held here (a catch-up replaced it): fetch it.
      this.#h.askCatchUp(true);
      return Promise.reject(new Error(`round ${r.height} is not verified here`));
    }
    // The committer writes it and builds the next round on it meanwhile.
    this.#h.tell({ type: 'decide', id: r.id, finalize: true });
    return Promise.resolve(undefined);
  }

  #rejected(r: Round, why: string, coordinator: boolean): void {
    r.ended = true;
    if (coordinator && r.own) {
      for (const id of r.own.included) this.#h.valid.delete(id);
      this.note = `Waiting for every member to agree (nothing commits while one cannot): round ${r.height} was not agreed (${why}); it is proposed again`;
      log.warn(`${this.#h.label}: round ${r.height} not agreed (${why}); proposing again`);
      // A rejected round is proposed again (upstream drops it), after a pause that grows.
      const pauseMs = Math.min(2000, 100 * 2 ** this.#attempts++);
      this.#h.tell({ type: 'decide', id: r.id, finalize: false, pauseMs });
      return;
    }
    if (r.held) for (const id of r.held.included) this.#h.valid.delete(id);
    r.held = undefined;
    // The committer drops the round (or, not built yet, never builds it).
    this.#h.tell({ type: 'decide', id: r.id, finalize: false });
  }

  /**
   * A member's verification: executed in the committer thread while every batch's
   * signatures are checked in the verify workers; VERIFIED only once both agree.
   */
  async #verify(r: Round): Promise<boolean> {
    const p = r.proposed;
    if (!p) return false;
    const summary = new Promise<RoundSummary>((resolve) => this.#summaries.set(r.id, resolve));
    this.#h.tell({ type: 'propose', round: { id: r.id, height: r.height, ts: r.ts, parentRoot: p.parentRoot, batches: ownBytes(p.batches) } });
    const [forged, s] = await Promise.all([p.checked, summary]);
    const refuse = (): boolean => {
      if (s.follows) this.#h.tell({ type: 'decide', id: r.id, finalize: false });
      return false;
    };
    if (r.ended || this.#closed) return refuse();
    const label = this.#h.label;
    if (forged) {
      log.warn(`${label}: round ${r.height}: batch ${forged.id} fails the signature checks (${forged.message}); not verified`);
      return refuse();
    }
    if (!s.follows) {
      if (r.height > s.height + 1) this.#h.askCatchUp(true);
      log.warn(`${label}: round ${r.height} does not follow this member's round ${s.height}; not verified`);
      return refuse();
    }
    if (s.root !== p.root || s.verdicts !== p.verdicts) {
      log.warn(`${label}: round ${r.height} gives root ${s.root.slice(0, 12)}… here, ${p.root.slice(0, 12)}… at the coordinator; not verified`);
      return refuse();
    }
    for (const id of s.included) this.#h.valid.add(id);
    r.held = s;
    return true;
  }

  // ------------------------------------------------------------------ messages

  /** A proposal from the coordinator (member): its signature checks begin now. */
  onProposed(pb: NonNullable<ScabbardMsg['proposedBatch']>): void {
    const p = decode<ProposalMsg>(Proposal, pb.proposal);
    const id = p.id.toString('ascii');
    const proposed = {
      checked: this.#h.checks.encoded(pb.batches),
      batches: pb.batches,
      parentRoot: p.previousId.toString('ascii'),
      root: p.summary.toString('ascii'),
      verdicts: p.consensusData.toString('ascii'),
    };
    this.#tp.add(id, { id, height: p.proposalHeight, ts: pb.timestampMs, proposed }, this.#verifiers(), this.#h.coordinator);
  }

  onConsensus(from: string, bytes: Buffer): void {
    this.#tp.receive(from, decodeConsensus(bytes).msg, undefined);
  }
}
