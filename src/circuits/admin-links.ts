/**
 * The admin service's side of the peer network: which connection reaches a member of a
 * circuit (by that circuit's authorization: trust → node id, challenge → peering key), the
 * peer references each circuit holds, the connections that agreed on admin protocol 2,
 * sending admin messages, checking that a connection speaks for a member, and the
 * rate-limited warnings for dropped peer messages.
 */
import { log } from '../log.js';
import { challengeToken, type Token } from './connection.js';
import type { PeerNetwork } from './peers.js';
import { AdminDirectMessage, AdminMessage, AuthorizationType, CircuitMessage, CircuitMsgType, encode, type CircuitMsg } from '../proto/circuits.js';
import type { AdminStore } from './store.js';
import { circuitIdOf } from './admin-changes.js';
import { isCircuitId, type Envelope } from './validate.js';

export const ADMIN = 'admin::';

/** A peer's messages dropped for one reason are logged once per this many ms (with a count). */
const DROP_LOG_MS = 10_000;

/** An id taken from a peer as it goes into a log line: quoted, control characters escaped, cut at `max` characters. */
export const shown = (s: string, max = 64): string => `'${JSON.stringify(s.length > max ? `${s.slice(0, max)}…` : s).slice(1, -1)}'`;

export interface Route {
  remote: Token;
  local: Token;
}

const keyOf = (t: Route): string => `${t.remote}|${t.local}`;

export class AdminLinks {
  readonly #store: AdminStore;
  readonly #net: PeerNetwork;
  readonly #nodeId: string;
  readonly #peeringKey: string;
  /** circuit id → release functions of its peer references */
  readonly #refs = new Map<string, Array<() => void>>();
  /** node id → the token pair to reach it */
  readonly #routes = new Map<string, Route>();
  /** `${remote}|${local}` of peers that agreed on admin protocol 2 */
  readonly #agreed = new Set<string>();
  /** `${what}|${kind}|${peer}` → when a drop was last logged, and how many were not logged since */
  readonly #drops = new Map<string, { at: number; quiet: number }>();
  #closed = false;

  constructor(store: AdminStore, net: PeerNetwork, nodeId: string, peeringKey: string) {
    this.#store = store;
    this.#net = net;
    this.#nodeId = nodeId;
    this.#peeringKey = peeringKey;
  }

  /** The token pair that reaches member `nodeId` of circuit `c` by its authorization. */
  tokens(c: CircuitMsg, nodeId: string): Route | null {
    const m = c.members.find((x) => x.nodeId === nodeId);
    if (!m) return null;
    if (c.authorizationType === AuthorizationType.CHALLENGE) {
      return { remote: challengeToken(Buffer.from(m.publicKey).toString('hex')), local: challengeToken(this.#peeringKey) };
    }
    return { remote: m.nodeId, local: this.#nodeId };
  }

  /** The members of a circuit other than this node. */
  others(c: CircuitMsg): string[] {
    return c.members.map((m) => m.nodeId).filter((n) => n !== this.#nodeId);
  }

  /** Keeps connections to the other members of a circuit (once per circuit). */
  ensureRefs(c: CircuitMsg): void {
    if (this.#closed || this.#refs.has(c.circuitId)) return;
    const releases: Array<() => void> = [];
    for (const m of c.members) {
      if (m.nodeId === this.#nodeId) continue;
      const t = this.tokens(c, m.nodeId);
      if (!t) continue;
      this.#routes.set(m.nodeId, t);
      releases.push(this.#net.addRef(t.remote, m.endpoints, t.local));
    }
    this.#refs.set(c.circuitId, releases);
  }

  dropRefs(circuitId: string): void {
    const r = this.#refs.get(circuitId);
    if (!r) return;
    this.#refs.delete(circuitId);
    for (const release of r) release();
  }

  /** Whether a node is connected and agreed on the admin protocol now. */
  agreedWith(nodeId: string): boolean {
    const t = this.#routes.get(nodeId);
    return t !== undefined && this.#agreed.has(keyOf(t));
  }

  /** Records a connection that agreed on the protocol; false when it already had. */
  agree(remote: Token, local: Token): boolean {
    const key = keyOf({ remote, local });
    if (this.#agreed.has(key)) return false;
    this.#agreed.add(key);
    return true;
  }

  disconnected(remote: Token, local: Token): void {
    this.#agreed.delete(keyOf({ remote, local }));
  }

  /** The nodes this node reaches over the connection `remote`/`local`. */
  nodesOn(remote: Token, local: Token): string[] {
    const key = keyOf({ remote, local });
    return [...this.#routes].filter(([, t]) => keyOf(t) === key).map(([n]) => n);
  }

  /** Whether member `nodeId` of `c` is reached over the connection `remote`/`local`. */
  isRoute(c: CircuitMsg, nodeId: string, remote: Token, local: Token): boolean {
    const t = this.tokens(c, nodeId);
    return t !== null && keyOf(t) === keyOf({ remote, local });
  }

  sendTo(remote: Token, local: Token, msg: object, recipientNode?: string): void {
    const challenge = remote.startsWith('public_key::');
    const sender = challenge ? `${ADMIN}${local}::${remote}` : `${ADMIN}${this.#nodeId}`;
    const recipient = challenge ? `${ADMIN}${remote}::${local}` : `${ADMIN}${recipientNode ?? remote}`;
    const direct = encode(AdminDirectMessage, { circuit: 'admin', sender, recipient, payload: encode(AdminMessage, msg) });
    this.#net.send(remote, local, encode(CircuitMessage, { messageType: CircuitMsgType.ADMIN_DIRECT, payload: direct }));
  }

  /**
   * Sends to a node's admin service; with the circuit the message is about, over the
   * connection of that circuit's authorization (the identity the receiver checks).
   */
  sendNode(nodeId: string, msg: object, c?: CircuitMsg): void {
    const t = (c && this.tokens(c, nodeId)) || this.#routes.get(nodeId);
    if (!t) {
      log.warn(`circuits: no route to node ${nodeId}; message dropped`);
      return;
    }
    this.sendTo(t.remote, t.local, msg, nodeId);
  }

  /**
   * Whether the connection `remote` is member `nodeId` of circuit `c` by that circuit's
   * authorization: trust, the node id the peer named in the handshake; challenge, the
   * peering key the circuit lists for that member, proven in the handshake. Never this node.
   */
  speaksFor(remote: Token, nodeId: string, c: CircuitMsg): boolean {
    if (nodeId === this.#nodeId) return false;
    return this.tokens(c, nodeId)?.remote === remote;
  }

  /** The circuit a change is about: the one proposed by a create, else the stored proposal's or circuit. */
  circuitOf(env: Envelope): CircuitMsg | undefined {
    const created = env.payload.circuitCreateRequest?.circuit;
    if (created) return created;
    return this.knownCircuit(circuitIdOf(env));
  }

  /** The circuit (stored, or proposed and stored) that `circuitId` names here. */
  knownCircuit(circuitId: string): CircuitMsg | undefined {
    if (!isCircuitId(circuitId)) return undefined;
    return this.#store.proposal(circuitId)?.circuitProposal ?? this.#store.circuit(circuitId);
  }

  /**
   * Drops a peer's message with a warning: the first of a kind (what, and why by `kind`)
   * from a peer at once, then at most one per DROP_LOG_MS with the number dropped in
   * between. Nothing else changes.
   */
  drop(remote: Token, what: string, why: string, kind = ''): void {
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

  close(): void {
    this.#closed = true;
    for (const id of [...this.#refs.keys()]) this.dropRefs(id);
  }
}
