/**
 * Two-phase commit among the members of a circuit, as the admin service and the scabbard
 * state service both run it (Splinter's two-phase consensus): the coordinator (by default
 * the member with the smallest id) sends VERIFICATION_REQUEST, every other member verifies
 * the proposal and answers VERIFICATION_RESPONSE (verified / failed), and the coordinator
 * applies it and sends RESULT APPLY once every member verified, RESULT REJECT otherwise
 * (a failed member, its own check, a timeout). A member applies on APPLY.
 *
 * One round is in progress at a time per machine (coordinating or taking part); other known
 * rounds wait. Stale, duplicate and out-of-order messages are handled here: responses for
 * a round this node does not coordinate now, or from a non-member, are ignored; a request
 * that comes before its proposal is held (bounded); a RESULT APPLY for a round this member
 * did not verify is verified first, or handed to `behind` when the proposal is unknown.
 *
 * Pure logic: sending, verifying, applying and timers are the caller's (see TwoPhaseDeps);
 * the encoding of the messages on the wire is here once (encodeConsensus/decodeConsensus).
 */
import { ConsensusMessage, TwoPhase as Wire, TwoPhaseMessage, decode, encode } from '../proto/circuits.js';

/** The wire constants of Splinter's TwoPhaseMessage. */
export const TwoPhase = Wire;

/** A decoded TwoPhaseMessage (fields not set are 0 / empty). */
export interface TwoPhaseMsg {
  messageType: number;
  proposalId: Buffer;
  proposalVerificationResponse: number;
  proposalResult: number;
  commitTimeMs: number;
}

/** What goes out: one of the three messages of a round. */
export type TwoPhaseOut =
  | { messageType: typeof Wire.VERIFICATION_REQUEST; proposalId: Buffer }
  | { messageType: typeof Wire.VERIFICATION_RESPONSE; proposalId: Buffer; proposalVerificationResponse: number }
  | { messageType: typeof Wire.RESULT; proposalId: Buffer; proposalResult: number; commitTimeMs: number };

/** A ConsensusMessage carrying a TwoPhaseMessage, from the service `originId`. */
export function encodeConsensus(originId: string, m: TwoPhaseOut): Uint8Array {
  return encode(ConsensusMessage, { message: encode(TwoPhaseMessage, m), originId: Buffer.from(originId, 'ascii') });
}

/** The origin and two-phase message of a ConsensusMessage (throws on bytes that are not one). */
export function decodeConsensus(bytes: Uint8Array): { origin: string; msg: TwoPhaseMsg } {
  const cm = decode<{ message: Buffer; originId: Buffer }>(ConsensusMessage, bytes);
  return { origin: cm.originId.toString('ascii'), msg: decode<TwoPhaseMsg>(TwoPhaseMessage, cm.message) };
}

export type Role = 'coordinator' | 'participant';

/** Timers: the real ones by default (unref'd), a scripted clock in tests. */
export interface Clock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realClock: Clock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/**
 * The caller's side. `V` is what the caller knows of the connection a message came on
 * (passed to `receive` and back to `authentic`), e.g. the peer's token.
 */
export interface TwoPhaseDeps<P, V = undefined> {
  /** This member's id (as the verifier lists name it). */
  self: string;
  /** Sends a message of a round to a member (the caller wraps it, e.g. with encodeConsensus). */
  send(to: string, msg: TwoPhaseOut, proposal: P | undefined): void;
  /** Whether the proposal holds here; the coordinator checks its own too before asking. */
  verify(proposal: P, round: { id: string; role: Role }): Promise<boolean>;
  /**
   * Applies an agreed proposal. On the coordinator it returns the commit time sent with
   * APPLY (nothing: 0), and a throw turns the round into REJECT; on a member it gets the
   * coordinator's commit time (0 when none was sent).
   */
  apply(proposal: P, round: { id: string; role: Role; commitTimeMs: number }): Promise<number | undefined>;
  /** A round ended here without being applied. */
  reject(proposal: P, why: string, round: { id: string; role: Role }): void;
  /** After every round's end, applied or not (bookkeeping: next proposals, retries). */
  settled?(proposal: P, round: { id: string; applied: boolean }): void;
  /** RESULT APPLY for a proposal this member does not know, or could not verify: it is behind. */
  behind?(id: string, coordinator: string, proposal: P | undefined): void;
  /** Whether a message that names member `from` of this round's proposal really came from it (default: yes). */
  authentic?(from: string, proposal: P, via: V): boolean;
  /**
   * A message dropped: `forged`, `authentic` said no; `not-coordinator`, a request or result
   * from a member that is not the round's coordinator.
   */
  ignored?(from: string, why: 'forged' | 'not-coordinator', round: { id: string; coordinator: string }, via: V): void;
  clock?: Clock;
  coordinatorTimeoutMs: number;
  participantTimeoutMs: number;
  /** A known round that never becomes current is forgotten after this long (default: both timeouts). */
  forgetAfterMs?: number;
  /** Verification requests held for proposals not known yet; 0 answers them FAILED at once (default 256). */
  earlyRequests?: number;
}

interface Round<P> {
  id: string;
  proposal: P;
  verifiers: string[];
  coordinator: string;
  forget: unknown;
}

interface Current<P> {
  round: Round<P>;
  role: Role;
  /** coordinator: waiting for answers, then applying; participant: verifying, then voted. */
  phase: 'verifying' | 'asking' | 'applying' | 'voted';
  verified: Set<string>;
  timer: unknown;
  /** A participant's verification in flight (a RESULT waits for it rather than asking again). */
  check?: Promise<boolean>;
  /** A participant's verification is answered only while this is still the one it began with. */
  gen: number;
}

/** How many ended rounds are remembered (for repeated results). */
const RECENT_MAX = 256;

const idBytes = (id: string): Buffer => Buffer.from(id, 'ascii');

export class TwoPhaseCommit<P, V = undefined> {
  readonly #d: TwoPhaseDeps<P, V>;
  readonly #clock: Clock;
  readonly #rounds = new Map<string, Round<P>>();
  /** round id → the member that asked, and over what, before the round was known here */
  readonly #early = new Map<string, { from: string; via: V }>();
  /** Rounds this member applies on a RESULT while another is current. */
  readonly #applying = new Set<string>();
  /** Rounds that ended here lately: a repeated RESULT for one is not taken for a member behind. */
  readonly #recent = new Set<string>();
  #current: Current<P> | null = null;
  #gen = 0;
  #closed = false;

  constructor(deps: TwoPhaseDeps<P, V>) {
    this.#d = deps;
    this.#clock = deps.clock ?? realClock;
  }

  /** The round in progress here, if any. */
  get current(): { id: string; role: Role } | null {
    return this.#current ? { id: this.#current.round.id, role: this.#current.role } : null;
  }

  /** Whether a round is known here (waiting, in progress, or being applied). */
  has(id: string): boolean {
    return this.#rounds.has(id);
  }

  /** The rounds known here, in the order they became known. */
  *proposals(): Generator<{ id: string; proposal: P; coordinator: string }> {
    for (const r of this.#rounds.values()) yield { id: r.id, proposal: r.proposal, coordinator: r.coordinator };
  }

  /**
   * A round this member takes part in: its own proposal, or one another member sent. When
   * `self` is its coordinator it is coordinated once no other round is in progress; else
   * it waits for the coordinator's request. A round already known is left as it is.
   */
  add(id: string, proposal: P, verifiers: string[], coordinator = [...verifiers].sort()[0] ?? this.#d.self): void {
    if (this.#closed || this.#rounds.has(id)) return;
    this.#recent.delete(id);
    const forgetMs = this.#d.forgetAfterMs ?? this.#d.coordinatorTimeoutMs + this.#d.participantTimeoutMs;
    const r: Round<P> = { id, proposal, verifiers: [...verifiers], coordinator, forget: null };
    r.forget = this.#clock.setTimeout(() => {
      if (this.#rounds.get(id) === r && this.#current?.round !== r && !this.#applying.has(id)) this.#end(r, 'participant', false, 'never decided');
    }, forgetMs);
    this.#rounds.set(id, r);
    this.#tick();
  }

  /** A two-phase message from member `from` (already decoded; `via` is passed to `authentic`). */
  receive(from: string, m: TwoPhaseMsg, via: V): void {
    if (this.#closed) return;
    const id = m.proposalId.toString('ascii');
    const r = this.#rounds.get(id);
    if (r && this.#d.authentic && !this.#d.authentic(from, r.proposal, via)) return this.#d.ignored?.(from, 'forged', r, via);
    switch (m.messageType) {
      case Wire.VERIFICATION_REQUEST:
        return this.#onRequest(from, id, r, via);
      case Wire.VERIFICATION_RESPONSE:
        return this.#onResponse(from, r, m.proposalVerificationResponse === Wire.VERIFIED);
      case Wire.RESULT:
        return this.#onResult(from, id, r, m, via);
      default:
        return;
    }
  }

  /** Stops every timer; nothing is sent or applied afterwards. */
  close(): void {
    this.#closed = true;
    if (this.#current) this.#clock.clearTimeout(this.#current.timer);
    for (const r of this.#rounds.values()) this.#clock.clearTimeout(r.forget);
    this.#current = null;
  }

  // ---------------------------------------------------------------- messages

  #onRequest(from: string, id: string, r: Round<P> | undefined, via: V): void {
    if (!r) {
      const max = this.#d.earlyRequests ?? 256;
      if (max === 0) return this.#answer(from, id, false, undefined);
      if (!this.#early.has(id) && this.#early.size >= max) {
        // Requests for rounds that never come are not kept without bound.
        const oldest = this.#early.keys().next();
        if (!oldest.done) this.#early.delete(oldest.value);
      }
      this.#early.set(id, { from, via });
      return;
    }
    if (r.coordinator !== from) return this.#d.ignored?.(from, 'not-coordinator', r, via);
    if (this.#applying.has(id)) return;
    const cur = this.#current;
    if (cur?.round === r && cur.role === 'participant') {
      // The coordinator asks again (its answer was lost, or it restarted): answer again.
      if (cur.phase === 'verifying') return;
      this.#clock.clearTimeout(cur.timer);
      this.#current = null;
      return this.#participate(r);
    }
    this.#early.set(id, { from, via });
    this.#tick();
  }

  #onResponse(from: string, r: Round<P> | undefined, ok: boolean): void {
    const cur = this.#current;
    // For a round this node does not coordinate now (unknown, old, timed out): ignored.
    if (!r || !cur || cur.round !== r || cur.role !== 'coordinator' || cur.phase !== 'asking') return;
    if (from === this.#d.self || !r.verifiers.includes(from)) return;
    if (!ok) return this.#decide(cur, false, `${from} could not verify it`);
    cur.verified.add(from);
    this.#maybeApply(cur);
  }

  #onResult(from: string, id: string, r: Round<P> | undefined, m: TwoPhaseMsg, via: V): void {
    if (r && r.coordinator !== from) return this.#d.ignored?.(from, 'not-coordinator', r, via);
    const apply = m.proposalResult === Wire.APPLY;
    if (!r) {
      if (apply && !this.#recent.has(id)) this.#d.behind?.(id, from, undefined);
      return;
    }
    if (this.#applying.has(id)) return;
    const cur = this.#current?.round === r ? this.#current : null;
    if (cur && cur.role !== 'participant') return;
    if (!apply) {
      if (cur) cur.gen = -1; // a verification in flight is not answered
      return this.#end(r, 'participant', false, 'rejected by the coordinator');
    }
    if (cur) {
      this.#clock.clearTimeout(cur.timer);
      cur.gen = -1;
    }
    // Verified here (or being verified): applied; not asked yet (a member behind): verified first.
    const check = cur?.phase === 'voted' ? Promise.resolve(true) : (cur?.check ?? this.#d.verify(r.proposal, { id, role: 'participant' }));
    this.#applying.add(id);
    void check
      .then(async (ok) => {
        if (this.#closed) return;
        if (!ok) {
          this.#applying.delete(id);
          this.#d.behind?.(id, from, r.proposal);
          return this.#end(r, 'participant', false, 'applied by the coordinator, but it does not verify here');
        }
        await this.#d.apply(r.proposal, { id, role: 'participant', commitTimeMs: m.commitTimeMs });
        this.#applying.delete(id);
        this.#end(r, 'participant', true);
      })
      .catch((err: unknown) => {
        this.#applying.delete(id);
        this.#end(r, 'participant', false, `apply failed: ${(err as Error).message}`);
      });
  }

  // ---------------------------------------------------------------- rounds

  /** Starts the next round when none is in progress: own coordinated rounds first, then requests. */
  #tick(): void {
    if (this.#closed || this.#current) return;
    for (const r of this.#rounds.values()) if (r.coordinator === this.#d.self && !this.#applying.has(r.id)) return this.#coordinate(r);
    for (const r of this.#rounds.values()) {
      const q = this.#early.get(r.id);
      if (!q || this.#applying.has(r.id)) continue;
      this.#early.delete(r.id);
      if (q.from !== r.coordinator || (this.#d.authentic && !this.#d.authentic(q.from, r.proposal, q.via))) {
        this.#d.ignored?.(q.from, q.from === r.coordinator ? 'forged' : 'not-coordinator', r, q.via);
        continue;
      }
      return this.#participate(r);
    }
  }

  #coordinate(r: Round<P>): void {
    const cur: Current<P> = { round: r, role: 'coordinator', phase: 'verifying', verified: new Set([this.#d.self]), timer: null, gen: 0 };
    this.#current = cur;
    cur.timer = this.#clock.setTimeout(() => this.#decide(cur, false, 'timed out waiting for verification'), this.#d.coordinatorTimeoutMs);
    void this.#d.verify(r.proposal, { id: r.id, role: 'coordinator' }).then(
      (ok) => {
        if (this.#current !== cur || cur.phase !== 'verifying') return;
        if (!ok) return this.#decide(cur, false, 'it does not verify at the coordinator');
        cur.phase = 'asking';
        for (const n of r.verifiers)
          if (n !== this.#d.self) this.#d.send(n, { messageType: Wire.VERIFICATION_REQUEST, proposalId: idBytes(r.id) }, r.proposal);
        this.#maybeApply(cur);
      },
      (err: unknown) => this.#current === cur && this.#decide(cur, false, `verification failed: ${(err as Error).message}`),
    );
  }

  #maybeApply(cur: Current<P>): void {
    const r = cur.round;
    if (cur.phase !== 'asking' || !r.verifiers.every((n) => cur.verified.has(n))) return;
    this.#decide(cur, true, '');
  }

  /** The coordinator's decision: APPLY once applied here, REJECT otherwise. */
  #decide(cur: Current<P>, apply: boolean, why: string): void {
    if (this.#current !== cur || cur.phase === 'applying') return;
    this.#clock.clearTimeout(cur.timer);
    const r = cur.round;
    if (!apply) {
      this.#result(r, Wire.REJECT, 0);
      return this.#end(r, 'coordinator', false, why);
    }
    cur.phase = 'applying';
    void this.#d.apply(r.proposal, { id: r.id, role: 'coordinator', commitTimeMs: 0 }).then(
      (ts) => {
        if (this.#closed) return;
        this.#result(r, Wire.APPLY, ts ?? 0);
        this.#end(r, 'coordinator', true);
      },
      (err: unknown) => {
        if (this.#closed) return;
        this.#result(r, Wire.REJECT, 0);
        this.#end(r, 'coordinator', false, `not applied here: ${(err as Error).message}`);
      },
    );
  }

  #result(r: Round<P>, result: number, commitTimeMs: number): void {
    for (const n of r.verifiers)
      if (n !== this.#d.self)
        this.#d.send(n, { messageType: Wire.RESULT, proposalId: idBytes(r.id), proposalResult: result, commitTimeMs }, r.proposal);
  }

  #participate(r: Round<P>): void {
    const gen = ++this.#gen;
    const cur: Current<P> = { round: r, role: 'participant', phase: 'verifying', verified: new Set(), timer: null, gen };
    this.#current = cur;
    cur.check = this.#d.verify(r.proposal, { id: r.id, role: 'participant' }).catch(() => false);
    void cur.check.then((ok) => {
      // A RESULT (or close) while verifying: not answered.
      if (this.#closed || this.#current !== cur || cur.gen !== gen) return;
      this.#answer(r.coordinator, r.id, ok, r.proposal);
      if (!ok) return this.#end(r, 'participant', false, 'it does not verify here');
      cur.phase = 'voted';
      cur.timer = this.#clock.setTimeout(
        () => this.#current === cur && cur.phase === 'voted' && this.#end(r, 'participant', false, `no result from coordinator ${r.coordinator}`),
        this.#d.participantTimeoutMs,
      );
    });
  }

  #answer(to: string, id: string, ok: boolean, proposal: P | undefined): void {
    this.#d.send(
      to,
      { messageType: Wire.VERIFICATION_RESPONSE, proposalId: idBytes(id), proposalVerificationResponse: ok ? Wire.VERIFIED : Wire.FAILED },
      proposal,
    );
  }

  /** A round's end here: forgotten, reported, and the next one started. */
  #end(r: Round<P>, role: Role, applied: boolean, why = ''): void {
    if (this.#rounds.get(r.id) !== r) return;
    if (this.#current?.round === r) {
      this.#clock.clearTimeout(this.#current.timer);
      this.#current = null;
    }
    this.#clock.clearTimeout(r.forget);
    this.#rounds.delete(r.id);
    this.#early.delete(r.id);
    this.#recent.add(r.id);
    if (this.#recent.size > RECENT_MAX) for (const old of this.#recent) if (this.#recent.delete(old)) break;
    if (!applied) this.#d.reject(r.proposal, why, { id: r.id, role });
    this.#d.settled?.(r.proposal, { id: r.id, applied });
    this.#tick();
  }
}
