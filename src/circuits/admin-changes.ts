/**
 * What a circuit management payload changes: the admin service's validation of a create,
 * vote or disband against this node's store and key registry, and the proposal it results
 * in (the one every member hashes and compares in the two-phase commit). No side effects.
 */
import { Action, Circuit, ProposalType, Status, encode, type CircuitMsg, type ProposalMsg } from '../proto/circuits.js';
import type { AdminStore } from './store.js';
import { ValidationError, checkCircuit, sha256Hex, voteOf, type Envelope } from './validate.js';

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

/** A validated change: its payload, the proposal it results in, and who must agree. */
export interface Change {
  env: Envelope;
  proposal: ProposalMsg;
  kind: 'create' | 'vote' | 'disband';
  members: string[];
  /** Rounds this node already ran for it without a commit. */
  attempts?: number;
}

export const fail = (m: string): never => {
  throw new ValidationError(m);
};

/** The circuit id a payload is about ('' when none). */
export function circuitIdOf(env: Envelope): string {
  const p = env.payload;
  return p.circuitCreateRequest?.circuit?.circuitId ?? p.circuitProposalVote?.circuitId ?? p.circuitDisbandRequest?.circuitId ?? '';
}

/** Whether the registry lists `keyHex` as an admin key of `nodeId`. */
export function registered(o: AdminOptions, nodeId: string, keyHex: string): boolean {
  return o.keysOf(nodeId)?.includes(keyHex) ?? false;
}

/** A new proposal of `circuit` by the payload's requester, with no votes yet. */
function proposalOf(proposalType: number, circuit: CircuitMsg, env: Envelope): ProposalMsg {
  return {
    proposalType,
    circuitId: circuit.circuitId,
    circuitHash: sha256Hex(encode(Circuit, circuit)),
    circuitProposal: circuit,
    votes: [],
    requester: env.header.requester,
    requesterNodeId: env.header.requesterNodeId,
  };
}

/** Validates a change against this node's store and registry, and builds the resulting proposal (throws ValidationError). */
export function proposeChange(env: Envelope, store: AdminStore, o: AdminOptions): Change {
  const h = env.header;
  const p = env.payload;
  const me = o.nodeId;
  switch (h.action) {
    case Action.CREATE: {
      const c = p.circuitCreateRequest?.circuit;
      const id = c?.circuitId ?? '';
      if (c && store.proposal(id)) fail(`Ignoring duplicate proposal for circuit ${id}`);
      if (c && store.circuit(id)) fail(`Circuit with circuit id ${id} already exists`);
      if (!registered(o, h.requesterNodeId, env.requesterHex))
        fail(`${env.requesterHex} is not registered for the requester node ${h.requesterNodeId}`);
      const circuit = checkCircuit(c, me);
      return { env, proposal: proposalOf(ProposalType.CREATE, circuit, env), kind: 'create', members: circuit.members.map((m) => m.nodeId) };
    }
    case Action.VOTE: {
      const v = p.circuitProposalVote;
      if (!v) return fail('A vote payload carries no vote');
      const stored = store.proposal(v.circuitId);
      if (!stored) return fail(`Received vote for a proposal that does not exist: circuit id ${v.circuitId}`);
      if (!registered(o, h.requesterNodeId, env.requesterHex)) fail(`${env.requesterHex} is not registered for voting node ${h.requesterNodeId}`);
      if (h.requesterNodeId === stored.requesterNodeId) fail(`Received vote from requester node: ${h.requesterNodeId}`);
      if (!stored.circuitProposal.members.some((m) => m.nodeId === h.requesterNodeId))
        fail(`Received vote from node ${h.requesterNodeId}, which is not a member of circuit ${v.circuitId}`);
      if (stored.votes.some((x) => x.voterNodeId === h.requesterNodeId)) fail(`Received duplicate vote from ${h.requesterNodeId} for ${v.circuitId}`);
      if (v.circuitHash !== stored.circuitHash) fail(`Hash of circuit does not match circuit proposal: ${v.circuitId}`);
      const vote = voteOf(v.vote);
      const proposal: ProposalMsg = { ...stored, votes: [...stored.votes, { publicKey: h.requester, vote, voterNodeId: h.requesterNodeId }] };
      return { env, proposal, kind: 'vote', members: stored.circuitProposal.members.map((m) => m.nodeId) };
    }
    case Action.DISBAND: {
      const d = p.circuitDisbandRequest;
      if (!d) return fail('A disband payload carries no disband request');
      const id = d.circuitId;
      if (!registered(o, h.requesterNodeId, env.requesterHex))
        fail(`${env.requesterHex} is not registered for the requester node ${h.requesterNodeId}`);
      if (store.proposal(id)) fail(`Ignoring duplicate proposal for circuit ${id}`);
      const c = store.circuit(id);
      if (!c) return fail(`Circuit with circuit id ${id} does not exist`);
      if (c.circuitStatus !== Status.ACTIVE) fail(`Attempting to disband an inactive circuit ${id}`);
      if (c.circuitVersion < 2) fail(`Attempting to disband a circuit with schema version ${c.circuitVersion}, must be 2`);
      if (!c.members.some((m) => m.nodeId === h.requesterNodeId)) fail(`Node ${h.requesterNodeId} is not a member of circuit ${id}`);
      // Rebuilt from the stored circuit: members, roster, enums, type, version, name; no metadata or comments.
      const circuit: CircuitMsg = { ...c, applicationMetadata: new Uint8Array(0), comments: '', circuitStatus: Status.DISBANDED };
      return { env, proposal: proposalOf(ProposalType.DISBAND, circuit, env), kind: 'disband', members: c.members.map((m) => m.nodeId) };
    }
    default:
      return fail(`Unable to handle action ${h.action}`);
  }
}
