/**
 * The admin service `admin::<node id>`: takes signed circuit
 * management payloads, sends proposals to the other members, and agrees on each change
 * with upstream's two-phase commit (coordinator = the member with the smallest admin
 * service id; a coordinator timeout, plus a participant timeout of our own). Commit
 * effects are single LMDB transactions (AdminStore.commit); events are pushed to
 * subscribers after the commit. Abandon, purge and proposal removal are local actions.
 *
 * This file is the service's front: submission and local actions, and the dispatch of
 * peer messages. Validation is in admin-changes.ts, the peer side in admin-links.ts,
 * agreement in admin-rounds.ts (over src/consensus/two-phase.ts), commit effects and the
 * ready exchange in admin-effects.ts.
 */
import { log } from '../log.js';
import type { Token } from './connection.js';
import type { PeerNetwork } from './peers.js';
import { fail, proposeChange, registered, type AdminOptions } from './admin-changes.js';
import { AdminEffects, type EventSink } from './admin-effects.js';
import { AdminLinks, shown } from './admin-links.js';
import { AdminRounds, type ProposedCircuit } from './admin-rounds.js';
import {
  Action,
  AdminMessage,
  AdminDirectMessage,
  AdminType,
  CircuitManagementPayload,
  CircuitDirectMessage,
  CircuitMessage,
  CircuitMsgType,
  Status,
  decode,
  encode,
} from '../proto/circuits.js';
import type { AdminStore } from './store.js';
import type { ServiceHooks } from '../scabbard/index.js';
import { ValidationError, checkEnvelope, isCircuitId, parsePayload, type Envelope } from './validate.js';

export type { AdminOptions } from './admin-changes.js';
export type { EventSink } from './admin-effects.js';

interface AdminMsg {
  messageType: number;
  consensusMessage: Buffer;
  proposedCircuit: ProposedCircuit | null;
  memberReady: { circuitId: string; memberNodeId: string } | null;
  abandonedCircuit: { circuitId: string; memberNodeId: string } | null;
  removedProposal: { circuitId: string } | null;
  protocolRequest: { protocolMin: number; protocolMax: number } | null;
  protocolResponse: { protocol: number } | null;
}

/** A field the message type requires (a message without it is dropped as not handled). */
function need<T>(v: T | null | undefined, what: string): T {
  if (v === null || v === undefined) throw new Error(`the message carries no ${what}`);
  return v;
}

export class AdminService {
  readonly store: AdminStore;
  readonly #o: AdminOptions;
  readonly #net: PeerNetwork;
  readonly #links: AdminLinks;
  readonly #effects: AdminEffects;
  readonly #rounds: AdminRounds;
  #closed = false;
  #services: ServiceHooks | null = null;

  constructor(store: AdminStore, net: PeerNetwork, o: AdminOptions) {
    this.store = store;
    this.#o = o;
    this.#net = net;
    this.#links = new AdminLinks(store, net, o.nodeId, o.peeringKey);
    this.#effects = new AdminEffects(store, this.#links, o.nodeId, (id) => this.#rounds.holdThenDrop(id));
    this.#rounds = new AdminRounds(store, this.#links, this.#effects, o);
    net.setListener({
      connected: (remote, local) => this.#onConnected(remote, local),
      disconnected: (remote, local) => this.#links.disconnected(remote, local),
      message: (remote, local, _type, payload) => this.#onNetwork(remote, local, payload),
    });
  }

  get nodeId(): string {
    return this.#o.nodeId;
  }

  /** After a restart: peers of every Active circuit, pending proposal and unfinished ready exchange. */
  start(): void {
    for (const c of this.store.circuits()) if (c.circuitStatus === Status.ACTIVE) this.#links.ensureRefs(c);
    for (const p of this.store.proposals()) this.#links.ensureRefs(p.circuitProposal);
    this.#effects.start();
  }

  /** The state services' side of the peer network (circuit direct messages, peers agreed). */
  attachServices(hooks: ServiceHooks): void {
    this.#services = hooks;
    this.#effects.setServices((id) => hooks.running(id));
  }

  /** A service of the circuit started on this node: the ready exchange goes on if it waited for it. */
  servicesStarted(circuitId: string): void {
    if (!this.#closed) this.#effects.servicesStarted(circuitId);
  }

  /** Sends a circuit direct message from one of this node's services to a service on `nodeId`. */
  sendDirect(nodeId: string, circuit: string, sender: string, recipient: string, payload: Uint8Array): void {
    // Over the connection of that circuit's authorization (the one the member checks it came on).
    const c = this.store.circuit(circuit);
    const t = c ? this.#links.tokens(c, nodeId) : null;
    if (!t) return log.warn(`circuits: no route to node ${nodeId} on circuit ${circuit}; service message dropped`);
    const direct = encode(CircuitDirectMessage, { circuit, sender, recipient, payload });
    this.#net.send(t.remote, t.local, encode(CircuitMessage, { messageType: CircuitMsgType.CIRCUIT_DIRECT, payload: direct }));
  }

  /** Whether a node is connected and agreed on the admin protocol now. */
  reachable(nodeId: string): boolean {
    return nodeId === this.#o.nodeId || this.#links.agreedWith(nodeId);
  }

  subscribe(sink: EventSink): () => void {
    return this.#effects.subscribe(sink);
  }

  close(): void {
    this.#closed = true;
    this.#rounds.close();
    this.#links.close();
  }

  // ---------------------------------------------------------------- submission

  /** Validates and queues a payload (throws ValidationError); local actions are done at once. */
  async submit(bytes: Uint8Array): Promise<void> {
    const env = checkEnvelope(parsePayload(bytes));
    const action = env.header.action;
    if (action === Action.ABANDON || action === Action.PURGE || action === Action.REMOVE_PROPOSAL) return this.#local(env);
    const change = proposeChange(env, this.store, this.#o);
    if (change.kind === 'vote' && env.header.requesterNodeId !== this.#o.nodeId) {
      fail(`A vote for node ${env.header.requesterNodeId} must be submitted to that node, not to ${this.#o.nodeId}`);
    }
    this.#rounds.enqueue(change);
  }

  /** Abandon, purge, remove-proposal: this node only, no agreement. */
  async #local(env: Envelope): Promise<void> {
    const h = env.header;
    const me = this.#o.nodeId;
    const p = env.payload;
    const target = p.circuitAbandon ?? p.circuitPurgeRequest ?? p.proposalRemoveRequest;
    if (!target) return fail(`A payload for action ${h.action} names no circuit`);
    const id = target.circuitId;
    const what = h.action === Action.ABANDON ? 'abandon' : h.action === Action.PURGE ? 'purge' : 'remove the proposal of';
    if (h.requesterNodeId !== me) fail(`Unable to ${what} circuit ${id} from node ${me}: request came from node ${h.requesterNodeId}`);
    if (!registered(this.#o, h.requesterNodeId, env.requesterHex))
      fail(`${env.requesterHex} is not registered for the requester node ${h.requesterNodeId}`);
    if (h.action === Action.REMOVE_PROPOSAL) {
      const prop = this.store.proposal(id);
      if (!prop) return fail(`Attempting to remove proposal for circuit ${id} that does not exist`);
      await this.store.commit({ deleteProposal: id });
      for (const m of this.#links.others(prop.circuitProposal))
        this.#links.sendNode(m, { messageType: AdminType.REMOVED_PROPOSAL, removedProposal: { circuitId: id } }, prop.circuitProposal);
      if (!this.store.circuit(id)) this.#links.dropRefs(id);
      log.info(`circuits: proposal for ${id} removed on this node`);
      return;
    }
    const c = this.store.circuit(id);
    if (!c) return fail(`Circuit with circuit id ${id} does not exist`);
    if (h.action === Action.ABANDON) {
      if (c.circuitStatus !== Status.ACTIVE) fail(`Attempting to abandon a circuit that is not active: ${id}`);
      await this.store.commit({ putCircuit: { ...c, circuitStatus: Status.ABANDONED } });
      for (const m of this.#links.others(c))
        this.#links.sendNode(m, { messageType: AdminType.ABANDONED_CIRCUIT, abandonedCircuit: { circuitId: id, memberNodeId: me } }, c);
      this.#links.dropRefs(id);
      log.info(`circuits: circuit ${id} abandoned on this node`);
    } else {
      if (c.circuitStatus === Status.ACTIVE) fail(`Attempting to purge a circuit that is still active: ${id}`);
      await this.store.commit({ deleteCircuit: id });
      log.info(`circuits: circuit ${id} purged on this node`);
    }
  }

  // ---------------------------------------------------------------- peer messages

  #onConnected(remote: Token, local: Token): void {
    this.#links.sendTo(remote, local, { messageType: AdminType.PROTOCOL_REQUEST, protocolRequest: { protocolMin: 1, protocolMax: 2 } });
  }

  #onNetwork(remote: Token, local: Token, bytes: Buffer): void {
    if (this.#closed) return;
    let msg: AdminMsg;
    try {
      const cm = decode<{ messageType: number; payload: Buffer }>(CircuitMessage, bytes);
      if (cm.messageType === CircuitMsgType.CIRCUIT_DIRECT) {
        const d = decode<{ circuit: string; sender: string; recipient: string; payload: Buffer }>(CircuitDirectMessage, cm.payload);
        const refused = this.#refuseDirect(remote, d);
        if (refused) return this.#links.drop(remote, 'service message', refused[1], refused[0]);
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
      return this.#links.drop(remote, 'undecodable message', (err as Error).message);
    }
    try {
      this.#onAdmin(remote, local, msg);
    } catch (err) {
      this.#links.drop(remote, `admin message ${msg.messageType}`, `not handled: ${(err as Error).message}`);
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
    const node = from.allowedNodes.length === 1 ? from.allowedNodes[0] : undefined;
    if (node === undefined || !this.#links.speaksFor(remote, node, c))
      return [`node|${c.circuitId}`, `service ${d.sender} of circuit ${d.circuit} runs on node ${shown(node ?? '?')}, which this peer is not`];
    return null;
  }

  #onAdmin(remote: Token, local: Token, m: AdminMsg): void {
    switch (m.messageType) {
      case AdminType.PROTOCOL_REQUEST: {
        const r = need(m.protocolRequest, 'protocol request');
        const ok = r.protocolMin <= 2 && 2 <= r.protocolMax;
        this.#links.sendTo(remote, local, { messageType: AdminType.PROTOCOL_RESPONSE, protocolResponse: { protocol: ok ? 2 : 0 } });
        if (ok) this.#agree(remote, local);
        return;
      }
      case AdminType.PROTOCOL_RESPONSE:
        if (need(m.protocolResponse, 'protocol response').protocol === 2) this.#agree(remote, local);
        else log.warn(`circuits: peer ${remote} has no admin protocol in common (answered ${m.protocolResponse?.protocol})`);
        return;
      case AdminType.PROPOSED_CIRCUIT:
        return this.#rounds.onProposed(remote, need(m.proposedCircuit, 'proposed circuit'));
      case AdminType.CONSENSUS:
        return this.#rounds.onConsensus(remote, m.consensusMessage);
      case AdminType.MEMBER_READY:
        return this.#effects.onMemberReady(remote, need(m.memberReady, 'member ready'));
      case AdminType.ABANDONED_CIRCUIT: {
        const a = need(m.abandonedCircuit, 'abandoned circuit');
        const c = this.#links.knownCircuit(a.circuitId);
        if (!c || !this.#links.speaksFor(remote, a.memberNodeId, c))
          return this.#links.drop(remote, 'abandon notice', `it is not member ${shown(a.memberNodeId)} of circuit ${shown(a.circuitId)} here`);
        log.warn(`circuits: node ${a.memberNodeId} abandoned circuit ${a.circuitId}`);
        return;
      }
      case AdminType.REMOVED_PROPOSAL: {
        const id = need(m.removedProposal, 'removed proposal').circuitId;
        const c = this.#links.knownCircuit(id);
        if (!c || !this.#links.others(c).some((n) => this.#links.speaksFor(remote, n, c)))
          return this.#links.drop(remote, 'proposal removal notice', `it is not a member of circuit ${shown(id)} here`);
        log.warn(`circuits: a member removed its proposal for circuit ${id}`);
        return;
      }
      default:
        log.debug(`circuits: ignored admin message type ${m.messageType}`);
    }
  }

  #agree(remote: Token, local: Token): void {
    if (!this.#links.agree(remote, local)) return;
    for (const nodeId of this.#links.nodesOn(remote, local)) this.#services?.reachable(nodeId);
    // Unfinished ready exchanges with this peer resume now.
    this.#effects.resume(remote, local);
    this.#rounds.pump();
  }
}

export { ValidationError, CircuitManagementPayload };
