/**
 * What an agreed change does on this node: its commit effects (one AdminStore
 * transaction each: proposal stored, vote added, proposal rejected or accepted into a
 * circuit), the event log pushed to subscribers after each commit, and the "member ready"
 * exchange that ends with CircuitReady / CircuitDisbanded once every member has the circuit.
 *
 * A member reports ready for a new circuit (MEMBER_READY) only once its own services of
 * that circuit run (the state services say when: `setServices`, `servicesStarted`), so
 * CircuitReady, which waits for every member's report, means every member's services
 * answer. Upstream reports ready at the accept and starts its services after the others'
 * reports: its CircuitReady says only that this node's services run (docs/circuits.md).
 */
import { log } from '../log.js';
import type { Token } from './connection.js';
import type { Change } from './admin-changes.js';
import { shown, type AdminLinks } from './admin-links.js';
import { AdminType, CircuitProposal, ProposalType, Status, Vote, decode, encode, type CircuitMsg, type ProposalMsg } from '../proto/circuits.js';
import type { AdminStore, EventRecord, NewEvent } from './store.js';

export type EventSink = (seq: number, rec: EventRecord) => void;

export class AdminEffects {
  readonly #store: AdminStore;
  readonly #links: AdminLinks;
  readonly #nodeId: string;
  /** A circuit whose proposal was rejected: its peers are released after a while (unless needed again). */
  readonly #release: (circuitId: string) => void;
  readonly #sinks = new Set<EventSink>();
  readonly #readyMarks = new Map<string, Set<string>>();
  readonly #readyReplied = new Set<string>();
  /** Whether this node's services of a circuit run now (the state services answer; none attached: yes). */
  #servicesUp: (circuitId: string) => boolean = () => true;
  /** Creates whose own MEMBER_READY waits for this node's services of the circuit to start. */
  readonly #ownWaiting = new Set<string>();
  /** Members that restarted and asked, by circuit: answered once this node's services run again. */
  readonly #repliesWaiting = new Map<string, Set<string>>();

  constructor(store: AdminStore, links: AdminLinks, nodeId: string, release: (circuitId: string) => void) {
    this.#store = store;
    this.#links = links;
    this.#nodeId = nodeId;
    this.#release = release;
  }

  subscribe(sink: EventSink): () => void {
    this.#sinks.add(sink);
    return () => void this.#sinks.delete(sink);
  }

  /** The state services' answer to "do this node's services of a circuit run?". */
  setServices(up: (circuitId: string) => boolean): void {
    this.#servicesUp = up;
  }

  /**
   * After a restart: this node is ready for every circuit whose ready exchange is
   * unfinished, a create once its services run again (they start after this).
   */
  start(): void {
    for (const [id, r] of this.#store.readyPending()) {
      this.#links.ensureRefs(decode<ProposalMsg>(CircuitProposal, r.proposal).circuitProposal);
      if (r.kind === 'create' && !this.#servicesUp(id)) this.#ownWaiting.add(id);
      else this.#mark(id, this.#nodeId);
    }
  }

  /**
   * This node's services of a circuit started (each calls it): once all of them run, the
   * MEMBER_READY that waited for them goes out, and the members that asked meanwhile are answered.
   */
  servicesStarted(circuitId: string): void {
    if (!this.#servicesUp(circuitId)) return;
    const r = this.#store.ready(circuitId);
    if (this.#ownWaiting.delete(circuitId) && r) {
      const c = decode<ProposalMsg>(CircuitProposal, r.proposal).circuitProposal;
      log.info(`circuits: this node's services of ${circuitId} run; reporting ready to the other members`);
      for (const n of this.#links.others(c)) this.#sendReady(n, circuitId, c);
      this.#mark(circuitId, this.#nodeId);
      void this.#checkReady(circuitId);
    }
    const asked = this.#repliesWaiting.get(circuitId);
    const c = this.#store.circuit(circuitId);
    this.#repliesWaiting.delete(circuitId);
    if (asked && c) for (const n of asked) this.#sendReady(n, circuitId, c);
  }

  /** Commits an agreed change at `ts`, and pushes its events. */
  async commit(change: Change, ts: number): Promise<void> {
    const p = change.proposal;
    const id = p.circuitId;
    let stored: Array<[number, EventRecord]>;
    let accepted = false;
    const last = p.votes[p.votes.length - 1];
    if (change.kind !== 'vote' || !last) {
      stored = await this.#store.commit({ putProposal: p, events: [{ type: 'ProposalSubmitted', ts, proposal: p, key: null }] });
    } else {
      const voter = Buffer.from(last.publicKey).toString('hex');
      const need = p.circuitProposal.members.map((m) => m.nodeId).filter((n) => n !== p.requesterNodeId);
      const voted = new Set(p.votes.map((v) => v.voterNodeId));
      const c = this.#store.circuit(id);
      if (p.votes.some((v) => v.vote === Vote.REJECT)) {
        stored = await this.#store.commit({ deleteProposal: id, events: [{ type: 'ProposalRejected', ts, proposal: p, key: voter }] });
        log.info(`circuits: proposal for ${id} rejected`);
        if (!c || c.circuitStatus !== Status.ACTIVE) this.#release(id);
      } else if (need.every((n) => voted.has(n))) {
        accepted = true;
        const disband = p.proposalType === ProposalType.DISBAND;
        if (disband && !c) throw new Error(`circuit ${id} to disband is not stored here`);
        const circuit: CircuitMsg = disband && c ? { ...c, circuitStatus: Status.DISBANDED } : { ...p.circuitProposal, circuitStatus: Status.ACTIVE };
        const events: NewEvent[] = [{ type: 'ProposalAccepted', ts, proposal: p, key: voter }];
        stored = await this.#store.commit({
          deleteProposal: id,
          putCircuit: circuit,
          putReady: [id, { kind: disband ? 'disband' : 'create', ts, proposal: encode(CircuitProposal, p) }],
          events,
        });
        log.info(`circuits: proposal for ${id} accepted (${disband ? 'disband' : 'create'})`);
      } else {
        stored = await this.#store.commit({ putProposal: p, events: [{ type: 'ProposalVote', ts, proposal: p, key: voter }] });
      }
    }
    this.#emit(stored);
    if (accepted) {
      // The services of a new circuit are starting now (the event above told them): this
      // node reports ready once they run (servicesStarted), a disband at once.
      if (p.proposalType !== ProposalType.DISBAND && !this.#servicesUp(id)) {
        this.#ownWaiting.add(id);
        return;
      }
      for (const n of this.#links.others(p.circuitProposal)) this.#sendReady(n, id, p.circuitProposal);
      this.#mark(id, this.#nodeId);
      await this.#checkReady(id);
    }
  }

  /** A member's MEMBER_READY, from the connection `remote`. */
  onMemberReady(remote: Token, r: { circuitId: string; memberNodeId: string }): void {
    // Only a member, for itself, over a connection that is that member in that circuit.
    const c = this.#links.knownCircuit(r.circuitId);
    if (!c || !this.#links.speaksFor(remote, r.memberNodeId, c))
      return this.#links.drop(remote, 'ready message', `it is not member ${shown(r.memberNodeId)} of circuit ${shown(r.circuitId)} here`);
    this.#mark(r.circuitId, r.memberNodeId);
    const key = `${r.circuitId}|${r.memberNodeId}`;
    // A member that restarted lost our mark: answer once when we are already done (once
    // this node's services run, if they are starting again).
    if (!this.#store.ready(r.circuitId) && this.#store.circuit(r.circuitId) && !this.#readyReplied.has(key)) {
      this.#readyReplied.add(key);
      if (this.#servicesUp(r.circuitId)) this.#sendReady(r.memberNodeId, r.circuitId, c);
      else {
        const asked = this.#repliesWaiting.get(r.circuitId) ?? new Set<string>();
        asked.add(r.memberNodeId);
        this.#repliesWaiting.set(r.circuitId, asked);
      }
    }
    void this.#checkReady(r.circuitId);
  }

  /** A connection agreed on the protocol: unfinished ready exchanges with that peer resume. */
  resume(remote: Token, local: Token): void {
    for (const [id, r] of this.#store.readyPending()) {
      if (this.#ownWaiting.has(id)) continue; // not ready here yet: said when the services run
      const c = decode<ProposalMsg>(CircuitProposal, r.proposal).circuitProposal;
      for (const n of this.#links.others(c)) if (this.#links.isRoute(c, n, remote, local)) this.#sendReady(n, id, c);
    }
  }

  #sendReady(to: string, circuitId: string, c: CircuitMsg): void {
    this.#links.sendNode(to, { messageType: AdminType.MEMBER_READY, memberReady: { circuitId, memberNodeId: this.#nodeId } }, c);
  }

  #mark(circuitId: string, nodeId: string): void {
    let s = this.#readyMarks.get(circuitId);
    if (!s) {
      s = new Set();
      this.#readyMarks.set(circuitId, s);
    }
    s.add(nodeId);
  }

  async #checkReady(circuitId: string): Promise<void> {
    const r = this.#store.ready(circuitId);
    const marks = this.#readyMarks.get(circuitId);
    if (!r || !marks) return;
    const p = decode<ProposalMsg>(CircuitProposal, r.proposal);
    if (!p.circuitProposal.members.every((m) => marks.has(m.nodeId))) return;
    this.#readyMarks.delete(circuitId);
    const type = r.kind === 'create' ? 'CircuitReady' : 'CircuitDisbanded';
    const stored = await this.#store.commit({ deleteReady: circuitId, events: [{ type, ts: r.ts + 1, proposal: p, key: null }] });
    log.info(`circuits: circuit ${circuitId} ${r.kind === 'create' ? 'ready' : 'disbanded'} on every member`);
    this.#emit(stored);
    if (r.kind === 'disband') this.#links.dropRefs(circuitId);
  }

  #emit(stored: Array<[number, EventRecord]>): void {
    for (const [seq, rec] of stored) {
      for (const s of this.#sinks) {
        try {
          s(seq, rec);
        } catch (err) {
          log.warn('circuits: event subscriber failed', err);
        }
      }
    }
  }
}
