/**
 * JSON of circuits, proposals and admin events, in protocol version 1 and 2 shapes. Built only from the
 * stored protobuf records, so every member renders the same bytes for the same record.
 * Roster arguments are [key, value] pairs in submitted order everywhere.
 */
import type { CircuitMsg, NodeMsg, ProposalMsg, ServiceMsg } from '../proto/circuits.js';
import { Status } from '../proto/circuits.js';

export type Version = 1 | 2;

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const STATUS = ['Active', 'Active', 'Disbanded', 'Abandoned'];
const PROPOSAL_TYPE = ['Create', 'Create', 'UpdateRoster', 'AddNode', 'RemoveNode', 'Disband'];
const VOTE = ['Accept', 'Accept', 'Reject'];

export const statusName = (s: number): string => STATUS[s] ?? 'Active';
export const circuitVersion = (c: CircuitMsg): number => (c.circuitVersion === 0 ? 1 : c.circuitVersion);
const args = (s: ServiceMsg): Array<[string, string]> => s.arguments.map((a) => [a.key, a.value]);
const optStr = (s: string): string | null => (s === '' ? null : s);

function member(m: NodeMsg, v: Version): object {
  return v === 1
    ? { node_id: m.nodeId, endpoints: m.endpoints }
    : { node_id: m.nodeId, endpoints: m.endpoints, public_key: m.publicKey.length ? hex(m.publicKey) : null };
}

/** Circuit summary (list and fetch of circuits). */
export function circuitJson(c: CircuitMsg, v: Version): object {
  if (v === 1) {
    return {
      id: c.circuitId,
      members: c.members.map((m) => m.nodeId),
      roster: c.roster.map((s) => ({ service_id: s.serviceId, service_type: s.serviceType, allowed_nodes: s.allowedNodes, arguments: args(s) })),
      management_type: c.circuitManagementType,
    };
  }
  return {
    id: c.circuitId,
    members: c.members.map((m) => member(m, 2)),
    roster: c.roster.map((s) => ({ service_id: s.serviceId, service_type: s.serviceType, node_id: s.allowedNodes[0] ?? null, arguments: args(s) })),
    management_type: c.circuitManagementType,
    display_name: optStr(c.displayName),
    circuit_version: circuitVersion(c),
    circuit_status: statusName(c.circuitStatus),
  };
}

/** Circuit proposal (list and fetch of proposals). */
export function proposalJson(p: ProposalMsg, v: Version): object {
  const c = p.circuitProposal;
  const circuit =
    v === 1
      ? {
          circuit_id: c.circuitId,
          members: c.members.map((m) => member(m, 1)),
          roster: c.roster.map((s) => ({ service_id: s.serviceId, service_type: s.serviceType, allowed_nodes: s.allowedNodes, arguments: args(s) })),
          management_type: c.circuitManagementType,
          application_metadata: hex(c.applicationMetadata),
          comments: c.comments,
        }
      : {
          circuit_id: c.circuitId,
          members: c.members.map((m) => member(m, 2)),
          roster: c.roster.map((s) => ({
            service_id: s.serviceId,
            service_type: s.serviceType,
            node_id: s.allowedNodes[0] ?? null,
            arguments: args(s),
          })),
          management_type: c.circuitManagementType,
          application_metadata: hex(c.applicationMetadata),
          comments: optStr(c.comments),
          display_name: optStr(c.displayName),
          circuit_version: circuitVersion(c),
          circuit_status: statusName(c.circuitStatus),
        };
  return proposalWith(p, PROPOSAL_TYPE[p.proposalType] ?? 'Create', circuit);
}

/** A proposal's JSON around its circuit's (the same fields, in the same order, in both forms). */
function proposalWith(p: ProposalMsg, type: string, circuit: object): object {
  return {
    proposal_type: type,
    circuit_id: p.circuitId,
    circuit_hash: p.circuitHash,
    circuit,
    votes: p.votes.map((x) => ({ public_key: hex(x.publicKey), vote: VOTE[x.vote] ?? 'Accept', voter_node_id: x.voterNodeId })),
    requester: hex(p.requester),
    requester_node_id: p.requesterNodeId,
  };
}

/** The proposal as admin events carry it (upstream's message form). */
function eventProposal(p: ProposalMsg, v: Version): object {
  const c = p.circuitProposal;
  const base = {
    circuit_id: c.circuitId,
    roster: c.roster.map((s) => ({ service_id: s.serviceId, service_type: s.serviceType, allowed_nodes: s.allowedNodes, arguments: args(s) })),
    members: c.members.map((m) =>
      v === 1
        ? { node_id: m.nodeId, endpoints: m.endpoints }
        : { node_id: m.nodeId, endpoints: m.endpoints, public_key: m.publicKey.length ? Array.from(m.publicKey) : null },
    ),
    authorization_type: c.authorizationType === 2 ? 'Challenge' : 'Trust',
    persistence: 'Any',
    durability: 'NoDurability',
    routes: 'Any',
    circuit_management_type: c.circuitManagementType,
    application_metadata: hex(c.applicationMetadata),
  };
  const circuit =
    v === 1
      ? { ...base, comments: c.comments }
      : {
          ...base,
          comments: optStr(c.comments),
          display_name: optStr(c.displayName),
          circuit_version: circuitVersion(c),
          circuit_status: statusName(c.circuitStatus),
        };
  const type = PROPOSAL_TYPE[p.proposalType] ?? 'Create';
  return proposalWith(p, v === 1 && type === 'Disband' ? 'Destroy' : type, circuit);
}

export type EventType = 'ProposalSubmitted' | 'ProposalVote' | 'ProposalAccepted' | 'ProposalRejected' | 'CircuitReady' | 'CircuitDisbanded';

/** One admin event as a websocket text frame; null when version 1 cannot express it. */
export function eventJson(type: EventType, timestamp: number, p: ProposalMsg, key: string | null, v: Version): string | null {
  if (v === 1 && type === 'CircuitDisbanded') return null;
  const proposal = eventProposal(p, v);
  const message = key === null ? proposal : [proposal, Array.from(Buffer.from(key, 'hex'))];
  return JSON.stringify({ timestamp, eventType: type, message });
}

export const ACTIVE = Status.ACTIVE;
