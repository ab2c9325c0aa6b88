/**
 * The admin service `admin::<node id>`: takes signed circuit
 * management payloads, sends proposals to the other members, and agrees on each change
 * with upstream's two-phase commit (coordinator = the member with the smallest admin
 * service id; a coordinator timeout, plus a participant timeout of our own). Commit
 * effects are single LMDB transactions (AdminStore.commit); events are pushed to
 * subscribers after the commit. Abandon, purge and proposal removal are local actions.
 */
import { log } from '../log.js';
import type { Token } from './connection.js';
import { challengeToken } from './connection.js';
import type { PeerNetwork } from './peers.js';
import {
  Action,
  AdminDirectMessage,
  AdminMessage,
  AdminType,
  AuthorizationType,
  Circuit,
  CircuitManagementPayload,
  CircuitDirectMessage,
  CircuitMessage,
  CircuitMsgType,
  CircuitProposal,
  ConsensusMessage,
  ProposalType,
  RequiredVerifiers,
  Status,
  TwoPhase,
  TwoPhaseMessage,
  Vote,
  decode,
  encode,
  type CircuitMsg,
  type PayloadMsg,
  type ProposalMsg,
} from './proto.js';
import type { AdminStore, EventRecord, NewEvent } from './store.js';
import { ValidationError, checkCircuit, checkEnvelope, isCircuitId, parsePayload, sha256Hex, voteOf, type Envelope } from './validate.js';

export interface AdminOptions {
  nodeId: string;
  /** Hex of the peering key (challenge identity). */
  peeringKey: string;
  /** Admin keys the local registry lists for a node (undefined: node unknown). */
  keysOf(nodeId: string): string[] | undefined;
  coordinatorTimeoutMs: number;
  participantTimeoutMs: number;
  /** How long peers of a rejected proposal stay referenced (upstream: 10 s). */
  holdPeersMs: number;
}

/** What the state services get from the admin service's peer connections. */
export interface ServiceHooks {
  message(circuit: string, sender: string, recipient: string, payload: Buffer): void;
  reachable(nodeId: string): void;
}

export type EventSink = (seq: number, rec: EventRecord) => void;

const fail = (m: string): never => {
  throw new ValidationError(m);
};

interface Change {
  env: Envelope;
  proposal: ProposalMsg;
  kind: 'create' | 'vote' | 'disband';
  members: string[];
  /** Rounds this node already ran for it without a commit. */
  attempts?: number;
}

/**
 * Own changes whose round ended without a commit (a member was down or a message was lost)
 * are proposed again, up to this many rounds in all, while they still validate here.
 * Upstream drops them after the first round; the client saw 202 either way.
 */
const MAX_ROUNDS = 5;
const RETRY_PAUSE_MS = 200;

interface Round {
  committed?: boolean;
  id: string;
  env: Envelope;
  expected: string;
  verifiers: string[];
  coordinator: string;
  at: number;
}

interface Current {
  id: string;
  role: 'coordinator' | 'participant';
  verified: Set<string>;
  timer: NodeJS.Timeout;
}

interface TwoPhaseMsg {
  messageType: number;
  proposalId: Buffer;
  proposalVerificationResponse: number;
  proposalResult: number;
  commitTimeMs: number;
}

const ADMIN = 'admin::';

/** A peer's messages dropped for one reason are logged once per this many ms (with a count). */
const DROP_LOG_MS = 10_000;
/** Verification requests kept for rounds this node has not heard of yet. */
const MAX_EARLY_REQUESTS = 256;

/** An id taken from a peer as it goes into a log line: quoted, control characters escaped, cut at `max` characters. */
const shown = (s: string, max = 64): string => `'${JSON.stringify(s.length > max ? `${s.slice(0, max)}…` : s).slice(1, -1)}'`;

export class AdminService {
  readonly store: AdminStore;
  readonly #net: PeerNetwork;
  readonly #o: AdminOptions;
  readonly #sinks = new Set<EventSink>();
  /** circuit id → release functions of its peer references */
  readonly #refs = new Map<string, Array<() => void>>();
  /** node id → the token pair to reach it */
  readonly #routes = new Map<string, { remote: Token; local: Token }>();
  /** `${remote}|${local}` of peers that agreed on admin protocol 2 */
  readonly #agreed = new Set<string>();
  readonly #queue: Change[] = [];
  #ownInFlight: { id: string; change: Change } | null = null;
  readonly #rounds = new Map<string, Round>();
  /** round id → who asked this node to verify it (the node it named, the connection it came on) */
  readonly #requests = new Map<string, { from: string; remote: Token }>();
  /** `${what}|${kind}|${peer}` → when a drop was last logged, and how many were not logged since */
  readonly #drops = new Map<string, { at: number; quiet: number }>();
  #current: Current | null = null;
  readonly #readyMarks = new Map<string, Set<string>>();
  readonly #readyReplied = new Set<string>();
  #closed = false;
  #services: ServiceHooks | null = null;

  constructor(store: AdminStore, net: PeerNetwork, o: AdminOptions) {
    this.store = store;
    this.#net = net;
    this.#o = o;
    net.setListener({
      connected: (remote, local) => this.#onConnected(remote, local),
      disconnected: (remote, local) => this.#agreed.delete(`${remote}|${local}`),
      message: (remote, local, _type, payload) => this.#onNetwork(remote, local, payload),
    });
  }

  get nodeId(): string {
    return this.#o.nodeId;
  }

  /** After a restart: peers of every Active circuit, pending proposal and unfinished ready exchange. */
  start(): void {
    for (const c of this.store.circuits()) if (c.circuitStatus === Status.ACTIVE) this.#ensureRefs(c);
    for (const p of this.store.proposals()) this.#ensureRefs(p.circuitProposal);
    for (const [id, r] of this.store.readyPending()) {
      this.#ensureRefs(decode<ProposalMsg>(CircuitProposal, r.proposal).circuitProposal);
      this.#mark(id, this.#o.nodeId);
    }
  }

  /** The state services' side of the peer network (circuit direct messages, peers agreed). */
  attachServices(hooks: ServiceHooks): void {
    this.#services = hooks;
  }

  /** Sends a circuit direct message from one of this node's services to a service on `nodeId`. */
  sendDirect(nodeId: string, circuit: string, sender: string, recipient: string, payload: Uint8Array): void {
    // Over the connection of that circuit's authorization (the one the member checks it came on).
    const c = this.store.circuit(circuit);
    const t = c ? this.#tokens(c, nodeId) : null;
    if (!t) return log.warn(`circuits: no route to node ${nodeId} on circuit ${circuit}; service message dropped`);
    const direct = encode(CircuitDirectMessage, { circuit, sender, recipient, payload });
    this.#net.send(t.remote, t.local, encode(CircuitMessage, { messageType: CircuitMsgType.CIRCUIT_DIRECT, payload: direct }));
  }

  /** Whether a node is connected and agreed on the admin protocol now. */
  reachable(nodeId: string): boolean {
    return nodeId === this.#o.nodeId || this.#agreedWith(nodeId);
  }

  subscribe(sink: EventSink): () => void {
    this.#sinks.add(sink);
    return () => void this.#sinks.delete(sink);
  }

  close(): void {
    this.#closed = true;
    if (this.#current) clearTimeout(this.#current.timer);
    for (const id of [...this.#refs.keys()]) this.#dropRefs(id);
  }

  // ---------------------------------------------------------------- submission

  /** Validates and queues a payload (throws ValidationError); local actions are done at once. */
  async submit(bytes: Uint8Array): Promise<void> {
    const env = checkEnvelope(parsePayload(bytes));
    const action = env.header.action;
    if (action === Action.ABANDON || action === Action.PURGE || action === Action.REMOVE_PROPOSAL) return this.#local(env);
    const change = this.#propose(env);
    if (change.kind === 'vote' && env.header.requesterNodeId !== this.#o.nodeId) {
      fail(`A vote for node ${env.header.requesterNodeId} must be submitted to that node, not to ${this.#o.nodeId}`);
    }
    if (
      this.#queue.some((q) => q.proposal.circuitId === change.proposal.circuitId && q.kind === change.kind && change.kind !== 'vote') ||
      (change.kind !== 'vote' && this.#roundFor(change.proposal.circuitId))
    ) {
      fail(`Ignoring duplicate proposal for circuit ${change.proposal.circuitId}`);
    }
    if (change.kind === 'create') this.#ensureRefs(change.proposal.circuitProposal);
    this.#queue.push(change);
    this.#pump();
  }

  #roundFor(circuitId: string): Round | undefined {
    for (const r of this.#rounds.values()) if (this.#circuitIdOf(r.env) === circuitId) return r;
    return undefined;
  }

  #circuitIdOf(env: Envelope): string {
    const p = env.payload;
    return p.circuitCreateRequest?.circuit?.circuitId ?? p.circuitProposalVote?.circuitId ?? p.circuitDisbandRequest?.circuitId ?? '';
  }

  #registered(nodeId: string, keyHex: string): boolean {
    return this.#o.keysOf(nodeId)?.includes(keyHex) ?? false;
  }

  /** Validates a change against this node's store and registry, and builds the resulting proposal. */
  #propose(env: Envelope): Change {
    const h = env.header;
    const p = env.payload;
    const me = this.#o.nodeId;
    switch (h.action) {
      case Action.CREATE: {
        const c = p.circuitCreateRequest?.circuit;
        const id = c?.circuitId ?? '';
        if (c && this.store.proposal(id)) fail(`Ignoring duplicate proposal for circuit ${id}`);
        if (c && this.store.circuit(id)) fail(`Circuit with circuit id ${id} already exists`);
        if (!this.#registered(h.requesterNodeId, env.requesterHex))
          fail(`${env.requesterHex} is not registered for the requester node ${h.requesterNodeId}`);
        const circuit = checkCircuit(c, me);
        const proposal: ProposalMsg = {
          proposalType: ProposalType.CREATE,
          circuitId: circuit.circuitId,
          circuitHash: sha256Hex(encode(Circuit, circuit)),
          circuitProposal: circuit,
          votes: [],
          requester: h.requester,
          requesterNodeId: h.requesterNodeId,
        };
        return { env, proposal, kind: 'create', members: circuit.members.map((m) => m.nodeId) };
      }
      case Action.VOTE: {
        const v = p.circuitProposalVote!;
        const stored = this.store.proposal(v.circuitId);
        if (!stored) return fail(`Received vote for a proposal that does not exist: circuit id ${v.circuitId}`);
        if (!this.#registered(h.requesterNodeId, env.requesterHex))
          fail(`${env.requesterHex} is not registered for voting node ${h.requesterNodeId}`);
        if (h.requesterNodeId === stored.requesterNodeId) fail(`Received vote from requester node: ${h.requesterNodeId}`);
        if (!stored.circuitProposal.members.some((m) => m.nodeId === h.requesterNodeId))
          fail(`Received vote from node ${h.requesterNodeId}, which is not a member of circuit ${v.circuitId}`);
        if (stored.votes.some((x) => x.voterNodeId === h.requesterNodeId))
          fail(`Received duplicate vote from ${h.requesterNodeId} for ${v.circuitId}`);
        if (v.circuitHash !== stored.circuitHash) fail(`Hash of circuit does not match circuit proposal: ${v.circuitId}`);
        const vote = voteOf(v.vote);
        const proposal: ProposalMsg = { ...stored, votes: [...stored.votes, { publicKey: h.requester, vote, voterNodeId: h.requesterNodeId }] };
        return { env, proposal, kind: 'vote', members: stored.circuitProposal.members.map((m) => m.nodeId) };
      }
      case Action.DISBAND: {
        const id = p.circuitDisbandRequest!.circuitId;
        if (!this.#registered(h.requesterNodeId, env.requesterHex))
          fail(`${env.requesterHex} is not registered for the requester node ${h.requesterNodeId}`);
        if (this.store.proposal(id)) fail(`Ignoring duplicate proposal for circuit ${id}`);
        const c = this.store.circuit(id);
        if (!c) return fail(`Circuit with circuit id ${id} does not exist`);
        if (c.circuitStatus !== Status.ACTIVE) fail(`Attempting to disband an inactive circuit ${id}`);
        if (c.circuitVersion < 2) fail(`Attempting to disband a circuit with schema version ${c.circuitVersion}, must be 2`);
        if (!c.members.some((m) => m.nodeId === h.requesterNodeId)) fail(`Node ${h.requesterNodeId} is not a member of circuit ${id}`);
        // Rebuilt from the stored circuit: members, roster, enums, type, version, name; no metadata or comments.
        const circuit: CircuitMsg = { ...c, applicationMetadata: new Uint8Array(0), comments: '', circuitStatus: Status.DISBANDED };
        const proposal: ProposalMsg = {
          proposalType: ProposalType.DISBAND,
          circuitId: id,
          circuitHash: sha256Hex(encode(Circuit, circuit)),
          circuitProposal: circuit,
          votes: [],
          requester: h.requester,
          requesterNodeId: h.requesterNodeId,
        };
        return { env, proposal, kind: 'disband', members: c.members.map((m) => m.nodeId) };
      }
      default:
        return fail(`Unable to handle action ${h.action}`);
    }
  }

  /** Abandon, purge, remove-proposal: this node only, no agreement. */
  async #local(env: Envelope): Promise<void> {
    const h = env.header;
    const me = this.#o.nodeId;
    const p = env.payload;
    const id = (p.circuitAbandon ?? p.circuitPurgeRequest ?? p.proposalRemoveRequest)!.circuitId;
    const what = h.action === Action.ABANDON ? 'abandon' : h.action === Action.PURGE ? 'purge' : 'remove the proposal of';
    if (h.requesterNodeId !== me) fail(`Unable to ${what} circuit ${id} from node ${me}: request came from node ${h.requesterNodeId}`);
    if (!this.#registered(h.requesterNodeId, env.requesterHex))
      fail(`${env.requesterHex} is not registered for the requester node ${h.requesterNodeId}`);
    if (h.action === Action.REMOVE_PROPOSAL) {
      const prop = this.store.proposal(id);
      if (!prop) return fail(`Attempting to remove proposal for circuit ${id} that does not exist`);
      await this.store.commit({ deleteProposal: id });
      for (const m of this.#others(prop.circuitProposal))
        this.#sendNode(m, { messageType: AdminType.REMOVED_PROPOSAL, removedProposal: { circuitId: id } }, prop.circuitProposal);
      if (!this.store.circuit(id)) this.#dropRefs(id);
      log.info(`circuits: proposal for ${id} removed on this node`);
      return;
    }
    const c = this.store.circuit(id);
    if (!c) return fail(`Circuit with circuit id ${id} does not exist`);
    if (h.action === Action.ABANDON) {
      if (c.circuitStatus !== Status.ACTIVE) fail(`Attempting to abandon a circuit that is not active: ${id}`);
      await this.store.commit({ putCircuit: { ...c, circuitStatus: Status.ABANDONED } });
      for (const m of this.#others(c))
        this.#sendNode(m, { messageType: AdminType.ABANDONED_CIRCUIT, abandonedCircuit: { circuitId: id, memberNodeId: me } }, c);
      this.#dropRefs(id);
      log.info(`circuits: circuit ${id} abandoned on this node`);
    } else {
      if (c.circuitStatus === Status.ACTIVE) fail(`Attempting to purge a circuit that is still active: ${id}`);
      await this.store.commit({ deleteCircuit: id });
      log.info(`circuits: circuit ${id} purged on this node`);
    }
  }

  // ---------------------------------------------------------------- peers

  #tokens(c: CircuitMsg, nodeId: string): { remote: Token; local: Token } | null {
    const m = c.members.find((x) => x.nodeId === nodeId);
    if (!m) return null;
    if (c.authorizationType === AuthorizationType.CHALLENGE) {
      return { remote: challengeToken(Buffer.from(m.publicKey).toString('hex')), local: challengeToken(this.#o.peeringKey) };
    }
    return { remote: m.nodeId, local: this.#o.nodeId };
  }

  #others(c: CircuitMsg): string[] {
    return c.members.map((m) => m.nodeId).filter((n) => n !== this.#o.nodeId);
  }

  #ensureRefs(c: CircuitMsg): void {
    if (this.#closed || this.#refs.has(c.circuitId)) return;
    const releases: Array<() => void> = [];
    for (const m of c.members) {
      if (m.nodeId === this.#o.nodeId) continue;
      const t = this.#tokens(c, m.nodeId)!;
      this.#routes.set(m.nodeId, t);
      releases.push(this.#net.addRef(t.remote, m.endpoints, t.local));
    }
    this.#refs.set(c.circuitId, releases);
  }

  #dropRefs(circuitId: string): void {
    const r = this.#refs.get(circuitId);
    if (!r) return;
    this.#refs.delete(circuitId);
    for (const release of r) release();
  }

  #agreedWith(nodeId: string): boolean {
    const t = this.#routes.get(nodeId);
    return t !== undefined && this.#agreed.has(`${t.remote}|${t.local}`);
  }

  #onConnected(remote: Token, local: Token): void {
    this.#sendTo(remote, local, { messageType: AdminType.PROTOCOL_REQUEST, protocolRequest: { protocolMin: 1, protocolMax: 2 } });
  }

  #sendTo(remote: Token, local: Token, msg: object, recipientNode?: string): void {
    const challenge = remote.startsWith('public_key::');
    const sender = challenge ? `${ADMIN}${local}::${remote}` : `${ADMIN}${this.#o.nodeId}`;
    const recipient = challenge ? `${ADMIN}${remote}::${local}` : `${ADMIN}${recipientNode ?? remote}`;
    const direct = encode(AdminDirectMessage, { circuit: 'admin', sender, recipient, payload: encode(AdminMessage, msg) });
    this.#net.send(remote, local, encode(CircuitMessage, { messageType: CircuitMsgType.ADMIN_DIRECT, payload: direct }));
  }

  /**
   * Sends to a node's admin service; with the circuit the message is about, over the
   * connection of that circuit's authorization (the identity the receiver checks).
   */
  #sendNode(nodeId: string, msg: object, c?: CircuitMsg): void {
    const t = (c && this.#tokens(c, nodeId)) || this.#routes.get(nodeId);
    if (!t) {
      log.warn(`circuits: no route to node ${nodeId}; message dropped`);
      return;
    }
    this.#sendTo(t.remote, t.local, msg, nodeId);
  }

  #onNetwork(remote: Token, local: Token, bytes: Buffer): void {
    if (this.#closed) return;
    let msg: AdminMsg;
    try {
      const cm = decode<{ messageType: number; payload: Buffer }>(CircuitMessage, bytes);
      if (cm.messageType === CircuitMsgType.CIRCUIT_DIRECT) {
        const d = decode<{ circuit: string; sender: string; recipient: string; payload: Buffer }>(CircuitDirectMessage, cm.payload);
        const refused = this.#refuseDirect(remote, d);
        if (refused) return this.#drop(remote, 'service message', refused[1], refused[0]);
        this.#services?.message(d.circuit, d.sender, d.recipient, d.payload);
        return;
      }
      if (cm.messageType !== CircuitMsgType.ADMIN_DIRECT) {
        log.debug(`circuits: ignored circuit message type ${cm.messageType} from ${remote}`);
        return;
      }
      const direct = decode<{ recipient: string; payload: Buffer }>(AdminDirectMessage, cm.payload);
      msg = decode<AdminMsg>(AdminMessage, direct.payload);
    } catch (err) {
      return this.#drop(remote, 'undecodable message', (err as Error).message);
    }
    try {
      this.#onAdmin(remote, local, msg);
    } catch (err) {
      this.#drop(remote, `admin message ${msg.messageType}`, `not handled: ${(err as Error).message}`);
    }
  }

  /**
   * Why a circuit direct message that came in on the connection `remote` is refused here,
   * or null when it may go to the state service: the circuit is Active here and names this
   * node, the recipient is a service of it on this node, and the sender is a service of it
   * on the node that connection speaks for (by that circuit's authorization).
   */
  #refuseDirect(remote: Token, d: { circuit: string; sender: string; recipient: string }): [kind: string, why: string] | null {
    const me = this.#o.nodeId;
    const c = isCircuitId(d.circuit) ? this.store.circuit(d.circuit) : undefined;
    if (!c?.members.some((m) => m.nodeId === me)) return ['circuit', `circuit ${shown(d.circuit)} is not a circuit of this node`];
    if ((c.circuitStatus || Status.ACTIVE) !== Status.ACTIVE) return [`inactive|${c.circuitId}`, `circuit ${d.circuit} is not active here`];
    const to = c.roster.find((s) => s.serviceId === d.recipient);
    if (!to?.allowedNodes.includes(me))
      return [`recipient|${c.circuitId}`, `service ${shown(d.recipient)} of circuit ${d.circuit} does not run on this node`];
    const from = c.roster.find((s) => s.serviceId === d.sender);
    if (!from) return [`sender|${c.circuitId}`, `service ${shown(d.sender)} is not in the roster of circuit ${d.circuit}`];
    const node = from.allowedNodes.length === 1 ? from.allowedNodes[0]! : undefined;
    if (node === undefined || !this.#speaksFor(remote, node, c))
      return [`node|${c.circuitId}`, `service ${d.sender} of circuit ${d.circuit} runs on node ${shown(node ?? '?')}, which this peer is not`];
    return null;
  }

  /**
   * Whether the connection `remote` is member `nodeId` of circuit `c` by that circuit's
   * authorization: trust, the node id the peer named in the handshake; challenge, the
   * peering key the circuit lists for that member, proven in the handshake. Never this node.
   */
  #speaksFor(remote: Token, nodeId: string, c: CircuitMsg): boolean {
    if (nodeId === this.#o.nodeId) return false;
    return this.#tokens(c, nodeId)?.remote === remote;
  }

  /** The circuit a change is about: the one proposed by a create, else the stored proposal's or circuit. */
  #circuitOf(env: Envelope): CircuitMsg | undefined {
    const created = env.payload.circuitCreateRequest?.circuit;
    if (created) return created;
    return this.#knownCircuit(this.#circuitIdOf(env));
  }

  /** The circuit (stored, or proposed and stored) that `circuitId` names here. */
  #knownCircuit(circuitId: string): CircuitMsg | undefined {
    if (!isCircuitId(circuitId)) return undefined;
    return this.store.proposal(circuitId)?.circuitProposal ?? this.store.circuit(circuitId);
  }

  /**
   * Drops a peer's message with a warning: the first of a kind (what, and why by `kind`)
   * from a peer at once, then at most one per DROP_LOG_MS with the number dropped in
   * between. Nothing else changes.
   */
  #drop(remote: Token, what: string, why: string, kind = ''): void {
    const key = `${what}|${kind}|${remote}`;
    const now = Date.now();
    const seen = this.#drops.get(key);
    if (seen && now - seen.at < DROP_LOG_MS) {
      seen.quiet++;
      return;
    }
    if (!seen && this.#drops.size >= 1000) {
      for (const [k, v] of this.#drops) if (now - v.at >= DROP_LOG_MS) this.#drops.delete(k);
      if (this.#drops.size >= 1000) this.#drops.clear();
    }
    this.#drops.set(key, { at: now, quiet: 0 });
    const more = seen?.quiet ? ` (and ${seen.quiet} more since the last warning)` : '';
    log.warn(`circuits: ${what} from peer ${shown(remote, 100)} dropped: ${why}${more}`);
  }

  #onAdmin(remote: Token, local: Token, m: AdminMsg): void {
    switch (m.messageType) {
      case AdminType.PROTOCOL_REQUEST: {
        const r = m.protocolRequest!;
        const ok = r.protocolMin <= 2 && 2 <= r.protocolMax;
        this.#sendTo(remote, local, { messageType: AdminType.PROTOCOL_RESPONSE, protocolResponse: { protocol: ok ? 2 : 0 } });
        if (ok) this.#agree(remote, local);
        return;
      }
      case AdminType.PROTOCOL_RESPONSE:
        if (m.protocolResponse!.protocol === 2) this.#agree(remote, local);
        else log.warn(`circuits: peer ${remote} has no admin protocol in common (answered ${m.protocolResponse!.protocol})`);
        return;
      case AdminType.PROPOSED_CIRCUIT:
        return this.#onProposed(remote, m.proposedCircuit!);
      case AdminType.CONSENSUS:
        return this.#onConsensus(remote, m.consensusMessage);
      case AdminType.MEMBER_READY: {
        const r = m.memberReady!;
        // Only a member, for itself, over a connection that is that member in that circuit.
        const c = this.#knownCircuit(r.circuitId);
        if (!c || !this.#speaksFor(remote, r.memberNodeId, c))
          return this.#drop(remote, 'ready message', `it is not member ${shown(r.memberNodeId)} of circuit ${shown(r.circuitId)} here`);
        this.#mark(r.circuitId, r.memberNodeId);
        const key = `${r.circuitId}|${r.memberNodeId}`;
        // A member that restarted lost our mark: answer once when we are already done.
        if (!this.store.ready(r.circuitId) && this.store.circuit(r.circuitId) && !this.#readyReplied.has(key)) {
          this.#readyReplied.add(key);
          this.#sendNode(
            r.memberNodeId,
            { messageType: AdminType.MEMBER_READY, memberReady: { circuitId: r.circuitId, memberNodeId: this.#o.nodeId } },
            c,
          );
        }
        void this.#checkReady(r.circuitId);
        return;
      }
      case AdminType.ABANDONED_CIRCUIT: {
        const a = m.abandonedCircuit!;
        const c = this.#knownCircuit(a.circuitId);
        if (!c || !this.#speaksFor(remote, a.memberNodeId, c))
          return this.#drop(remote, 'abandon notice', `it is not member ${shown(a.memberNodeId)} of circuit ${shown(a.circuitId)} here`);
        log.warn(`circuits: node ${a.memberNodeId} abandoned circuit ${a.circuitId}`);
        return;
      }
      case AdminType.REMOVED_PROPOSAL: {
        const id = m.removedProposal!.circuitId;
        const c = this.#knownCircuit(id);
        if (!c || !this.#others(c).some((n) => this.#speaksFor(remote, n, c)))
          return this.#drop(remote, 'proposal removal notice', `it is not a member of circuit ${shown(id)} here`);
        log.warn(`circuits: a member removed its proposal for circuit ${id}`);
        return;
      }
      default:
        log.debug(`circuits: ignored admin message type ${m.messageType}`);
    }
  }

  #agree(remote: Token, local: Token): void {
    const key = `${remote}|${local}`;
    if (this.#agreed.has(key)) return;
    this.#agreed.add(key);
    for (const [nodeId, t] of this.#routes) if (`${t.remote}|${t.local}` === key) this.#services?.reachable(nodeId);
    // Unfinished ready exchanges with this peer resume now.
    for (const [id, r] of this.store.readyPending()) {
      const c = decode<ProposalMsg>(CircuitProposal, r.proposal).circuitProposal;
      for (const n of this.#others(c)) {
        const t = this.#tokens(c, n);
        if (t && `${t.remote}|${t.local}` === key)
          this.#sendNode(n, { messageType: AdminType.MEMBER_READY, memberReady: { circuitId: id, memberNodeId: this.#o.nodeId } }, c);
      }
    }
    this.#pump();
  }

  // ---------------------------------------------------------------- two-phase commit

  /** Sends the next own change once every member is connected and agreed. */
  #pump(): void {
    if (this.#closed || this.#ownInFlight !== null) return;
    const next = this.#queue[0];
    if (!next) return;
    if (!next.members.every((n) => n === this.#o.nodeId || this.#agreedWith(n))) return;
    this.#queue.shift();
    let change: Change;
    try {
      change = this.#propose(next.env); // the store may have changed while it waited
    } catch (err) {
      log.warn(`circuits: queued payload for ${next.proposal.circuitId} dropped: ${(err as Error).message}`);
      return this.#pump();
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
    if (change.kind === 'create') this.#ensureRefs(circuit);
    for (const n of verifiers) if (n !== this.#o.nodeId) this.#sendNode(n, proposed, circuit);
    this.#ownInFlight = { id, change: { ...change, attempts: (next.attempts ?? 0) + 1 } };
    this.#addRound(id, change.env, expected, verifiers);
  }

  #addRound(id: string, env: Envelope, expected: string, verifiers: string[]): void {
    if (this.#rounds.has(id)) return;
    const coordinator = [...verifiers].sort()[0]!;
    this.#rounds.set(id, { id, env, expected, verifiers, coordinator, at: Date.now() });
    // A round nobody finishes (lost messages, a member gone) is forgotten after a while.
    setTimeout(() => {
      if (this.#rounds.has(id) && this.#current?.id !== id) {
        log.warn(`circuits: proposal ${id.slice(0, 12)}… never decided; dropped`);
        this.#finish(id);
      }
    }, this.#o.coordinatorTimeoutMs + this.#o.participantTimeoutMs).unref();
    this.#tick();
  }

  #onProposed(remote: Token, pc: { circuitPayload: PayloadMsg | null; expectedHash: Buffer; requiredVerifiers: Buffer }): void {
    if (!pc.circuitPayload) return;
    const env = checkEnvelope(pc.circuitPayload);
    const id = sha256Hex(env.bytes);
    const verifiers = decode<{ verifiers: Buffer[] }>(RequiredVerifiers, pc.requiredVerifiers)
      .verifiers.map((v) => v.toString('ascii'))
      .filter((v) => v.startsWith(ADMIN))
      .map((v) => v.slice(ADMIN.length));
    if (!verifiers.includes(this.#o.nodeId)) return log.warn(`circuits: received a proposal that does not name this node as a verifier`);
    // Proposed by another member of the circuit it is about (the payload itself is signed by its requester).
    const about = this.#circuitOf(env);
    if (!about || !this.#others(about).some((n) => this.#speaksFor(remote, n, about)))
      return this.#drop(remote, 'proposal', `it is not another member of circuit ${shown(this.#circuitIdOf(env))} as known here`);
    if (env.header.action === Action.CREATE && env.payload.circuitCreateRequest?.circuit) {
      // A create teaches this node the other members' endpoints.
      const c = env.payload.circuitCreateRequest.circuit;
      if (c.members.some((m) => m.nodeId === this.#o.nodeId)) this.#ensureRefs(c);
    }
    this.#addRound(id, env, pc.expectedHash.toString('ascii'), verifiers);
  }

  /** Validates the round's change here and compares the resulting proposal's hash. */
  #check(r: Round): Change | null {
    try {
      const change = this.#propose(r.env);
      // The members decide, every one of them: a round naming other verifiers has another coordinator.
      const verifiers = new Set(r.verifiers);
      if (verifiers.size !== change.members.length || !change.members.every((n) => verifiers.has(n))) {
        log.warn(`circuits: proposal ${r.id.slice(0, 12)}… names verifiers other than the circuit's members`);
        return null;
      }
      const got = sha256Hex(encode(CircuitProposal, change.proposal));
      if (got !== r.expected) {
        log.warn(
          `circuits: proposal ${r.id.slice(0, 12)}… does not match this node's state (hash ${got.slice(0, 12)}… ≠ ${r.expected.slice(0, 12)}…)`,
        );
        return null;
      }
      return change;
    } catch (err) {
      log.warn(`circuits: proposal ${r.id.slice(0, 12)}… fails validation here: ${(err as Error).message}`);
      return null;
    }
  }

  #tick(): void {
    if (this.#closed || this.#current) return;
    for (const r of this.#rounds.values()) {
      if (r.coordinator === this.#o.nodeId) return this.#coordinate(r);
    }
    for (const r of this.#rounds.values()) {
      const q = this.#requests.get(r.id);
      if (!q) continue;
      // A request that came before its round: only the round's coordinator, over its connection, counts.
      const c = this.#circuitOf(r.env);
      if (q.from === r.coordinator && c && this.#speaksFor(q.remote, q.from, c)) return this.#evaluate(r);
      this.#requests.delete(r.id);
      this.#drop(q.remote, 'consensus message', `it is not the coordinator ${shown(r.coordinator)} of proposal ${r.id.slice(0, 12)}…`);
    }
  }

  #coordinate(r: Round): void {
    const change = this.#check(r);
    if (!change) {
      this.#broadcastResult(r, TwoPhase.REJECT, 0);
      return this.#finish(r.id);
    }
    const timer = setTimeout(() => {
      log.warn(`circuits: proposal ${r.id.slice(0, 12)}… timed out waiting for verification; rejected`);
      this.#broadcastResult(r, TwoPhase.REJECT, 0);
      this.#finish(r.id);
    }, this.#o.coordinatorTimeoutMs);
    timer.unref();
    this.#current = { id: r.id, role: 'coordinator', verified: new Set([this.#o.nodeId]), timer };
    for (const n of r.verifiers)
      if (n !== this.#o.nodeId) this.#sendConsensus(n, { messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: Buffer.from(r.id, 'ascii') }, r);
    void this.#maybeApply(r);
  }

  #evaluate(r: Round): void {
    const coordinator = r.coordinator;
    const change = this.#check(r);
    this.#sendConsensus(
      coordinator,
      {
        messageType: TwoPhase.VERIFICATION_RESPONSE,
        proposalId: Buffer.from(r.id, 'ascii'),
        proposalVerificationResponse: change ? TwoPhase.VERIFIED : TwoPhase.FAILED,
      },
      r,
    );
    if (!change) return this.#finish(r.id);
    const timer = setTimeout(() => {
      log.warn(`circuits: no result for proposal ${r.id.slice(0, 12)}… from coordinator ${coordinator}; dropped`);
      this.#finish(r.id);
    }, this.#o.participantTimeoutMs);
    timer.unref();
    this.#current = { id: r.id, role: 'participant', verified: new Set(), timer };
  }

  async #maybeApply(r: Round): Promise<void> {
    const cur = this.#current;
    if (!cur || cur.id !== r.id || cur.role !== 'coordinator' || !r.verifiers.every((n) => cur.verified.has(n))) return;
    clearTimeout(cur.timer);
    const change = this.#check(r);
    if (!change) {
      this.#broadcastResult(r, TwoPhase.REJECT, 0);
      return this.#finish(r.id);
    }
    const ts = Math.max(Date.now(), this.store.lastTs + 2);
    r.committed = true;
    await this.#commit(change, ts);
    this.#broadcastResult(r, TwoPhase.APPLY, ts);
    this.#finish(r.id);
  }

  #broadcastResult(r: Round, result: number, ts: number): void {
    for (const n of r.verifiers) {
      if (n === this.#o.nodeId) continue;
      this.#sendConsensus(n, { messageType: TwoPhase.RESULT, proposalId: Buffer.from(r.id, 'ascii'), proposalResult: result, commitTimeMs: ts }, r);
    }
  }

  #sendConsensus(nodeId: string, m: object, r: Round): void {
    const consensus = encode(ConsensusMessage, { message: encode(TwoPhaseMessage, m), originId: Buffer.from(ADMIN + this.#o.nodeId, 'ascii') });
    this.#sendNode(nodeId, { messageType: AdminType.CONSENSUS, consensusMessage: consensus }, this.#circuitOf(r.env));
  }

  #onConsensus(remote: Token, bytes: Buffer): void {
    const cm = decode<{ message: Buffer; originId: Buffer }>(ConsensusMessage, bytes);
    const origin = cm.originId.toString('ascii');
    if (!origin.startsWith(ADMIN)) return;
    const from = origin.slice(ADMIN.length);
    const m = decode<TwoPhaseMsg>(TwoPhaseMessage, cm.message);
    const id = m.proposalId.toString('ascii');
    const r0 = this.#rounds.get(id);
    if (r0) {
      // The admin service it names must be the node this connection is, in the circuit the round is about.
      const c = this.#circuitOf(r0.env);
      if (!c || !this.#speaksFor(remote, from, c))
        return this.#drop(remote, 'consensus message', `it is not node ${shown(from)} of the circuit of proposal ${id.slice(0, 12)}…`);
    }
    switch (m.messageType) {
      case TwoPhase.VERIFICATION_REQUEST: {
        const r = this.#rounds.get(id);
        if (r && r.coordinator !== from) return;
        if (!r && !this.#requests.has(id) && this.#requests.size >= MAX_EARLY_REQUESTS) {
          // Requests for rounds that never come are not kept without bound.
          for (const [k] of this.#requests) {
            if (!this.#rounds.has(k)) {
              this.#requests.delete(k);
              break;
            }
          }
        }
        this.#requests.set(id, { from, remote });
        if (r && this.#current?.id === id && this.#current.role === 'participant') {
          // The coordinator asks again (a new round of the same change): answer again.
          clearTimeout(this.#current.timer);
          this.#current = null;
          return this.#evaluate(r);
        }
        return this.#tick();
      }
      case TwoPhase.VERIFICATION_RESPONSE: {
        const r = this.#rounds.get(id);
        const cur = this.#current;
        if (!r || !cur || cur.id !== id || cur.role !== 'coordinator' || !r.verifiers.includes(from)) return;
        if (m.proposalVerificationResponse === TwoPhase.VERIFIED) {
          cur.verified.add(from);
          void this.#maybeApply(r);
        } else {
          log.warn(`circuits: node ${from} failed to verify proposal ${id.slice(0, 12)}…; rejected`);
          clearTimeout(cur.timer);
          this.#broadcastResult(r, TwoPhase.REJECT, 0);
          this.#finish(id);
        }
        return;
      }
      case TwoPhase.RESULT: {
        const r = this.#rounds.get(id);
        if (!r || r.coordinator !== from) return;
        if (m.proposalResult === TwoPhase.APPLY) {
          const change = this.#check(r);
          if (!change) {
            log.error(`circuits: coordinator ${from} applied proposal ${id.slice(0, 12)}…, which this node cannot apply`);
            return this.#finish(id);
          }
          r.committed = true;
          void this.#commit(change, m.commitTimeMs || Math.max(Date.now(), this.store.lastTs + 2)).then(() => this.#finish(id));
          return;
        }
        log.info(`circuits: proposal ${id.slice(0, 12)}… rejected by the coordinator`);
        return this.#finish(id);
      }
      default:
        return;
    }
  }

  #finish(id: string): void {
    const r = this.#rounds.get(id);
    if (this.#current?.id === id) {
      clearTimeout(this.#current.timer);
      this.#current = null;
    }
    this.#rounds.delete(id);
    this.#requests.delete(id);
    if (r && r.env.header.action === Action.CREATE) {
      const cid = this.#circuitIdOf(r.env);
      // A create that did not commit leaves nothing that needs these peers.
      if (!this.store.proposal(cid) && !this.store.circuit(cid)) this.#holdThenDrop(cid);
    }
    if (this.#ownInFlight?.id === id) {
      const own = this.#ownInFlight.change;
      this.#ownInFlight = null;
      if (r && !r.committed && (own.attempts ?? 0) < MAX_ROUNDS) {
        // After a pause: a concurrent change (e.g. another member's vote) may still be landing here.
        const delay = RETRY_PAUSE_MS * 2 ** ((own.attempts ?? 1) - 1);
        log.warn(
          `circuits: round for ${own.proposal.circuitId} ended without a commit; proposing it again in ${delay} ms (round ${(own.attempts ?? 0) + 1} of ${MAX_ROUNDS})`,
        );
        setTimeout(() => {
          if (this.#closed) return;
          this.#queue.unshift(own);
          this.#pump();
        }, delay).unref();
      }
    }
    this.#tick();
    this.#pump();
  }

  #holdThenDrop(circuitId: string): void {
    setTimeout(() => {
      if (!this.store.proposal(circuitId) && !this.#roundFor(circuitId) && !this.#queue.some((q) => q.proposal.circuitId === circuitId)) {
        const c = this.store.circuit(circuitId);
        if (!c || c.circuitStatus !== Status.ACTIVE) this.#dropRefs(circuitId);
      }
    }, this.#o.holdPeersMs).unref();
  }

  // ---------------------------------------------------------------- commit effects

  async #commit(change: Change, ts: number): Promise<void> {
    const p = change.proposal;
    const id = p.circuitId;
    let stored: Array<[number, EventRecord]>;
    let accepted = false;
    if (change.kind !== 'vote') {
      stored = await this.store.commit({ putProposal: p, events: [{ type: 'ProposalSubmitted', ts, proposal: p, key: null }] });
    } else {
      const last = p.votes[p.votes.length - 1]!;
      const voter = Buffer.from(last.publicKey).toString('hex');
      const need = p.circuitProposal.members.map((m) => m.nodeId).filter((n) => n !== p.requesterNodeId);
      const voted = new Set(p.votes.map((v) => v.voterNodeId));
      if (p.votes.some((v) => v.vote === Vote.REJECT)) {
        stored = await this.store.commit({ deleteProposal: id, events: [{ type: 'ProposalRejected', ts, proposal: p, key: voter }] });
        log.info(`circuits: proposal for ${id} rejected`);
        const c = this.store.circuit(id);
        if (!c || c.circuitStatus !== Status.ACTIVE) this.#holdThenDrop(id);
      } else if (need.every((n) => voted.has(n))) {
        accepted = true;
        const disband = p.proposalType === ProposalType.DISBAND;
        const circuit: CircuitMsg = disband
          ? { ...this.store.circuit(id)!, circuitStatus: Status.DISBANDED }
          : { ...p.circuitProposal, circuitStatus: Status.ACTIVE };
        const events: NewEvent[] = [{ type: 'ProposalAccepted', ts, proposal: p, key: voter }];
        stored = await this.store.commit({
          deleteProposal: id,
          putCircuit: circuit,
          putReady: [id, { kind: disband ? 'disband' : 'create', ts, proposal: encode(CircuitProposal, p) }],
          events,
        });
        log.info(`circuits: proposal for ${id} accepted (${disband ? 'disband' : 'create'})`);
      } else {
        stored = await this.store.commit({ putProposal: p, events: [{ type: 'ProposalVote', ts, proposal: p, key: voter }] });
      }
    }
    this.#emit(stored);
    if (accepted) {
      for (const n of this.#others(p.circuitProposal))
        this.#sendNode(n, { messageType: AdminType.MEMBER_READY, memberReady: { circuitId: id, memberNodeId: this.#o.nodeId } }, p.circuitProposal);
      this.#mark(id, this.#o.nodeId);
      await this.#checkReady(id);
    }
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
    const r = this.store.ready(circuitId);
    const marks = this.#readyMarks.get(circuitId);
    if (!r || !marks) return;
    const p = decode<ProposalMsg>(CircuitProposal, r.proposal);
    if (!p.circuitProposal.members.every((m) => marks.has(m.nodeId))) return;
    this.#readyMarks.delete(circuitId);
    const type = r.kind === 'create' ? 'CircuitReady' : 'CircuitDisbanded';
    const stored = await this.store.commit({ deleteReady: circuitId, events: [{ type, ts: r.ts + 1, proposal: p, key: null }] });
    log.info(`circuits: circuit ${circuitId} ${r.kind === 'create' ? 'ready' : 'disbanded'} on every member`);
    this.#emit(stored);
    if (r.kind === 'disband') this.#dropRefs(circuitId);
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

interface AdminMsg {
  messageType: number;
  consensusMessage: Buffer;
  proposedCircuit: { circuitPayload: PayloadMsg | null; expectedHash: Buffer; requiredVerifiers: Buffer } | null;
  memberReady: { circuitId: string; memberNodeId: string } | null;
  abandonedCircuit: { circuitId: string; memberNodeId: string } | null;
  removedProposal: { circuitId: string } | null;
  protocolRequest: { protocolMin: number; protocolMax: number } | null;
  protocolResponse: { protocol: number } | null;
}

export { ValidationError, CircuitManagementPayload };
