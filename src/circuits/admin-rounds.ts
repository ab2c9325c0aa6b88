/**
 * The admin service's agreement on changes: own changes wait in a queue until every member
 * is connected, go out as PROPOSED_CIRCUIT, and each proposal (own or another member's) is
 * one round of the shared two-phase commit (src/consensus/two-phase.ts), coordinated by the
 * member with the smallest admin service id. This file is the glue: it checks a round
 * against this node's state, commits it through AdminEffects, routes the consensus messages
 * over the connection of the round's circuit, and proposes an own change again when its
 * round ended without a commit.
 */
import { log } from '../log.js';
import { TwoPhaseCommit, decodeConsensus, encodeConsensus } from '../consensus/two-phase.js';
import type { Token } from './connection.js';
import { circuitIdOf, fail, proposeChange, type AdminOptions, type Change } from './admin-changes.js';
import type { AdminEffects } from './admin-effects.js';
import { ADMIN, shown, type AdminLinks } from './admin-links.js';
import { Action, AdminType, CircuitProposal, RequiredVerifiers, Status, decode, encode, type PayloadMsg } from '../proto/circuits.js';
import type { AdminStore } from './store.js';
import { checkEnvelope, sha256Hex, type Envelope } from './validate.js';

/**
 * Own changes whose round ended without a commit (a member was down or a message was lost)
 * are proposed again, up to this many rounds in all, while they still validate here.
 * Upstream drops them after the first round; the client saw 202 either way.
 */
const MAX_ROUNDS = 5;
const RETRY_PAUSE_MS = 200;

/** One proposal being agreed on: the payload, the proposal hash it must give, its verifiers. */
interface Round {
  id: string;
  env: Envelope;
  expected: string;
  verifiers: string[];
}

export interface ProposedCircuit {
  circuitPayload: PayloadMsg | null;
  expectedHash: Buffer;
  requiredVerifiers: Buffer;
}

const short = (id: string): string => `${id.slice(0, 12)}…`;

export class AdminRounds {
  readonly #store: AdminStore;
  readonly #links: AdminLinks;
  readonly #effects: AdminEffects;
  readonly #o: AdminOptions;
  readonly #queue: Change[] = [];
  #ownInFlight: { id: string; change: Change } | null = null;
  readonly #tp: TwoPhaseCommit<Round, Token>;
  #closed = false;

  constructor(store: AdminStore, links: AdminLinks, effects: AdminEffects, o: AdminOptions) {
    this.#store = store;
    this.#links = links;
    this.#effects = effects;
    this.#o = o;
    this.#tp = new TwoPhaseCommit<Round, Token>({
      self: o.nodeId,
      coordinatorTimeoutMs: o.coordinatorTimeoutMs,
      participantTimeoutMs: o.participantTimeoutMs,
      send: (to, m, r) => {
        const consensus = encodeConsensus(ADMIN + o.nodeId, m);
        this.#links.sendNode(to, { messageType: AdminType.CONSENSUS, consensusMessage: consensus }, r && this.#links.circuitOf(r.env));
      },
      verify: async (r) => this.#check(r) !== null,
      apply: (r, { role, commitTimeMs }) => this.#apply(r, role === 'coordinator' ? 0 : commitTimeMs),
      reject: (r, why, { role }) => {
        if (why === 'rejected by the coordinator') log.info(`circuits: proposal ${short(r.id)} rejected by the coordinator`);
        else log.warn(`circuits: proposal ${short(r.id)} not committed (${role}): ${why}`);
      },
      settled: (r, { applied }) => this.#settled(r, applied),
      behind: (id, from, r) => {
        if (r) log.error(`circuits: coordinator ${from} applied proposal ${short(id)}, which this node cannot apply`);
      },
      // The admin service a message names must be the node its connection is, in the circuit the round is about.
      authentic: (from, r, remote) => {
        const c = this.#links.circuitOf(r.env);
        return c !== undefined && this.#links.speaksFor(remote, from, c);
      },
      ignored: (from, why, r, remote) =>
        this.#links.drop(
          remote,
          'consensus message',
          why === 'forged'
            ? `it is not node ${shown(from)} of the circuit of proposal ${short(r.id)}`
            : `it is not the coordinator ${shown(r.coordinator)} of proposal ${short(r.id)}`,
        ),
    });
  }

  /** Queues a validated own change (throws ValidationError for a duplicate). */
  enqueue(change: Change): void {
    if (
      this.#queue.some((q) => q.proposal.circuitId === change.proposal.circuitId && q.kind === change.kind && change.kind !== 'vote') ||
      (change.kind !== 'vote' && this.roundFor(change.proposal.circuitId))
    ) {
      fail(`Ignoring duplicate proposal for circuit ${change.proposal.circuitId}`);
    }
    if (change.kind === 'create') this.#links.ensureRefs(change.proposal.circuitProposal);
    this.#queue.push(change);
    this.pump();
  }

  /** The round in progress or waiting here for a circuit. */
  roundFor(circuitId: string): Round | undefined {
    for (const { proposal } of this.#tp.proposals()) if (circuitIdOf(proposal.env) === circuitId) return proposal;
    return undefined;
  }

  /** Sends the next own change once every member is connected and agreed. */
  pump(): void {
    if (this.#closed || this.#ownInFlight !== null) return;
    const next = this.#queue[0];
    if (!next) return;
    if (!next.members.every((n) => n === this.#o.nodeId || this.#links.agreedWith(n))) return;
    this.#queue.shift();
    let change: Change;
    try {
      change = proposeChange(next.env, this.#store, this.#o); // the store may have changed while it waited
    } catch (err) {
      log.warn(`circuits: queued payload for ${next.proposal.circuitId} dropped: ${(err as Error).message}`);
      return this.pump();
    }
    const id = sha256Hex(change.env.bytes);
    const expected = sha256Hex(encode(CircuitProposal, change.proposal));
    const verifiers = change.members;
    const circuit = change.proposal.circuitProposal;
    const proposed = {
      messageType: AdminType.PROPOSED_CIRCUIT,
      proposedCircuit: {
        circuitPayload: change.env.payload,
        expectedHash: Buffer.from(expected, 'ascii'),
        requiredVerifiers: encode(RequiredVerifiers, { verifiers: verifiers.map((n) => Buffer.from(ADMIN + n, 'ascii')) }),
      },
    };
    if (change.kind === 'create') this.#links.ensureRefs(circuit);
    for (const n of verifiers) if (n !== this.#o.nodeId) this.#links.sendNode(n, proposed, circuit);
    this.#ownInFlight = { id, change: { ...change, attempts: (next.attempts ?? 0) + 1 } };
    this.#tp.add(id, { id, env: change.env, expected, verifiers }, verifiers);
  }

  /** Another member's PROPOSED_CIRCUIT, from the connection `remote`. */
  onProposed(remote: Token, pc: ProposedCircuit): void {
    if (!pc.circuitPayload) return;
    const env = checkEnvelope(pc.circuitPayload);
    const id = sha256Hex(env.bytes);
    const verifiers = decode<{ verifiers: Buffer[] }>(RequiredVerifiers, pc.requiredVerifiers)
      .verifiers.map((v) => v.toString('ascii'))
      .filter((v) => v.startsWith(ADMIN))
      .map((v) => v.slice(ADMIN.length));
    if (!verifiers.includes(this.#o.nodeId)) return log.warn(`circuits: received a proposal that does not name this node as a verifier`);
    // Proposed by another member of the circuit it is about (the payload itself is signed by its requester).
    const about = this.#links.circuitOf(env);
    if (!about || !this.#links.others(about).some((n) => this.#links.speaksFor(remote, n, about)))
      return this.#links.drop(remote, 'proposal', `it is not another member of circuit ${shown(circuitIdOf(env))} as known here`);
    if (env.header.action === Action.CREATE && env.payload.circuitCreateRequest?.circuit) {
      // A create teaches this node the other members' endpoints.
      const c = env.payload.circuitCreateRequest.circuit;
      if (c.members.some((m) => m.nodeId === this.#o.nodeId)) this.#links.ensureRefs(c);
    }
    this.#tp.add(id, { id, env, expected: pc.expectedHash.toString('ascii'), verifiers }, verifiers);
  }

  /** A CONSENSUS admin message, from the connection `remote`. */
  onConsensus(remote: Token, bytes: Buffer): void {
    const { origin, msg } = decodeConsensus(bytes);
    if (!origin.startsWith(ADMIN)) return;
    this.#tp.receive(origin.slice(ADMIN.length), msg, remote);
  }

  close(): void {
    this.#closed = true;
    this.#tp.close();
  }

  /** Validates the round's change here and compares the resulting proposal's hash. */
  #check(r: Round): Change | null {
    try {
      const change = proposeChange(r.env, this.#store, this.#o);
      // The members decide, every one of them: a round naming other verifiers has another coordinator.
      const verifiers = new Set(r.verifiers);
      if (verifiers.size !== change.members.length || !change.members.every((n) => verifiers.has(n))) {
        log.warn(`circuits: proposal ${short(r.id)} names verifiers other than the circuit's members`);
        return null;
      }
      const got = sha256Hex(encode(CircuitProposal, change.proposal));
      if (got !== r.expected) {
        log.warn(`circuits: proposal ${short(r.id)} does not match this node's state (hash ${short(got)} ≠ ${short(r.expected)})`);
        return null;
      }
      return change;
    } catch (err) {
      log.warn(`circuits: proposal ${short(r.id)} fails validation here: ${(err as Error).message}`);
      return null;
    }
  }

  /** Commits an agreed round (checked again: the store may have moved); returns its commit time. */
  async #apply(r: Round, commitTimeMs: number): Promise<number> {
    const change = this.#check(r);
    if (!change) throw new Error('it no longer validates here');
    const ts = commitTimeMs || Math.max(Date.now(), this.#store.lastTs + 2);
    await this.#effects.commit(change, ts);
    return ts;
  }

  /** A round ended: release the peers of a create that did not commit, propose an own change again. */
  #settled(r: Round, committed: boolean): void {
    if (r.env.header.action === Action.CREATE) {
      const cid = circuitIdOf(r.env);
      // A create that did not commit leaves nothing that needs these peers.
      if (!this.#store.proposal(cid) && !this.#store.circuit(cid)) this.holdThenDrop(cid);
    }
    if (this.#ownInFlight?.id === r.id) {
      const own = this.#ownInFlight.change;
      this.#ownInFlight = null;
      if (!committed && (own.attempts ?? 0) < MAX_ROUNDS) {
        // After a pause: a concurrent change (e.g. another member's vote) may still be landing here.
        const delay = RETRY_PAUSE_MS * 2 ** ((own.attempts ?? 1) - 1);
        log.warn(
          `circuits: round for ${own.proposal.circuitId} ended without a commit; proposing it again in ${delay} ms (round ${(own.attempts ?? 0) + 1} of ${MAX_ROUNDS})`,
        );
        setTimeout(() => {
          if (this.#closed) return;
          this.#queue.unshift(own);
          this.pump();
        }, delay).unref();
      }
    }
    this.pump();
  }

  /** Releases a circuit's peers after a while, unless a proposal, round, queued change or active circuit needs them. */
  holdThenDrop(circuitId: string): void {
    setTimeout(() => {
      if (!this.#store.proposal(circuitId) && !this.roundFor(circuitId) && !this.#queue.some((q) => q.proposal.circuitId === circuitId)) {
        const c = this.#store.circuit(circuitId);
        if (!c || c.circuitStatus !== Status.ACTIVE) this.#links.dropRefs(circuitId);
      }
    }, this.#o.holdPeersMs).unref();
  }
}
