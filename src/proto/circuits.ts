/**
 * The circuit wire messages (circuits.proto beside it) and a canonical encoder: fields in
 * number order (protobufjs sorts them) and proto3 defaults left out, as upstream's encoder
 * writes them. Hashes of proposals are taken over these bytes, so every member must
 * produce the same bytes for the same message.
 */
import type protobuf from 'protobufjs';
import { loadProto } from './index.js';

const root = loadProto('circuits.proto');
const t = (name: string): protobuf.Type => root.lookupType(`cairn.circuits.${name}`);

export const NetworkMessage = t('NetworkMessage');
export const AuthorizationMessage = t('AuthorizationMessage');
export const AuthorizationError = t('AuthorizationError');
export const AuthProtocolRequest = t('AuthProtocolRequest');
export const AuthProtocolResponse = t('AuthProtocolResponse');
export const AuthTrustRequest = t('AuthTrustRequest');
export const AuthChallengeNonceResponse = t('AuthChallengeNonceResponse');
export const AuthChallengeSubmitRequest = t('AuthChallengeSubmitRequest');
export const AuthChallengeSubmitResponse = t('AuthChallengeSubmitResponse');
export const CircuitMessage = t('CircuitMessage');
export const AdminDirectMessage = t('AdminDirectMessage');
export const CircuitDirectMessage = t('CircuitDirectMessage');
export const Circuit = t('Circuit');
export const CircuitProposal = t('CircuitProposal');
export const CircuitManagementPayload = t('CircuitManagementPayload');
export const PayloadHeader = t('CircuitManagementPayload.Header');
export const CircuitProposalVote = t('CircuitProposalVote');
export const CircuitCreateRequest = t('CircuitCreateRequest');
export const CircuitIdRequest = t('CircuitIdRequest');
export const AdminMessage = t('AdminMessage');
export const ConsensusMessage = t('ConsensusMessage');
export const TwoPhaseMessage = t('TwoPhaseMessage');
export const RequiredVerifiers = t('RequiredVerifiers');

export const NetworkType = { HEARTBEAT: 2, CIRCUIT: 100, AUTHORIZATION: 101 } as const;
export const AuthType = {
  ERROR: 4,
  COMPLETE: 100,
  PROTOCOL_REQUEST: 101,
  PROTOCOL_RESPONSE: 102,
  TRUST_REQUEST: 110,
  TRUST_RESPONSE: 111,
  NONCE_REQUEST: 120,
  NONCE_RESPONSE: 121,
  SUBMIT_REQUEST: 122,
  SUBMIT_RESPONSE: 123,
} as const;
export const PeerAuth = { TRUST: 1, CHALLENGE: 2 } as const;
export const CircuitMsgType = { CIRCUIT_DIRECT: 3, ADMIN_DIRECT: 100 } as const;
export const AdminType = {
  CONSENSUS: 1,
  PROPOSED_CIRCUIT: 2,
  MEMBER_READY: 3,
  ABANDONED_CIRCUIT: 4,
  REMOVED_PROPOSAL: 5,
  PROTOCOL_REQUEST: 100,
  PROTOCOL_RESPONSE: 101,
} as const;
export const Action = {
  VOTE: 1,
  CREATE: 2,
  DISBAND: 8,
  PURGE: 9,
  ABANDON: 10,
  REMOVE_PROPOSAL: 11,
} as const;
export const ProposalType = { CREATE: 1, DISBAND: 5 } as const;
export const Vote = { ACCEPT: 1, REJECT: 2 } as const;
export const Status = { UNSET: 0, ACTIVE: 1, DISBANDED: 2, ABANDONED: 3 } as const;
export const AuthorizationType = { TRUST: 1, CHALLENGE: 2 } as const;
export const TwoPhase = { VERIFICATION_REQUEST: 1, VERIFICATION_RESPONSE: 2, RESULT: 3, VERIFIED: 1, FAILED: 2, APPLY: 1, REJECT: 2 } as const;

/** Plain shapes (protobufjs camelCases field names). */
export interface NodeMsg {
  nodeId: string;
  endpoints: string[];
  publicKey: Uint8Array;
}
export interface ArgumentMsg {
  key: string;
  value: string;
}
export interface ServiceMsg {
  serviceId: string;
  serviceType: string;
  allowedNodes: string[];
  arguments: ArgumentMsg[];
}
export interface CircuitMsg {
  circuitId: string;
  roster: ServiceMsg[];
  members: NodeMsg[];
  authorizationType: number;
  persistence: number;
  durability: number;
  routes: number;
  circuitManagementType: string;
  applicationMetadata: Uint8Array;
  comments: string;
  displayName: string;
  circuitVersion: number;
  circuitStatus: number;
}
export interface VoteRecordMsg {
  publicKey: Uint8Array;
  vote: number;
  voterNodeId: string;
}
export interface ProposalMsg {
  proposalType: number;
  circuitId: string;
  circuitHash: string;
  circuitProposal: CircuitMsg;
  votes: VoteRecordMsg[];
  requester: Uint8Array;
  requesterNodeId: string;
}
export interface HeaderMsg {
  action: number;
  requester: Uint8Array;
  payloadSha512: Uint8Array;
  requesterNodeId: string;
}
export interface VoteMsg {
  circuitId: string;
  circuitHash: string;
  vote: number;
}
export interface PayloadMsg {
  header: Uint8Array;
  signature: Uint8Array;
  circuitProposalVote?: VoteMsg | null;
  circuitCreateRequest?: { circuit?: CircuitMsg | null } | null;
  circuitUpdateRosterRequest: Uint8Array;
  circuitUpdateAddNode: Uint8Array;
  circuitUpdateRemoveNode: Uint8Array;
  circuitUpdateApplicationMetadataRequest: Uint8Array;
  circuitJoinRequest: Uint8Array;
  circuitDisbandRequest?: { circuitId: string } | null;
  circuitPurgeRequest?: { circuitId: string } | null;
  circuitAbandon?: { circuitId: string } | null;
  proposalRemoveRequest?: { circuitId: string } | null;
}

/** Drops proto3 default values (0, '', false, empty bytes and lists) so they are not written. */
function prune(v: unknown): unknown {
  if (v instanceof Uint8Array) return v.length === 0 ? undefined : v;
  if (Array.isArray(v)) return v.length === 0 ? undefined : v.map((x) => (typeof x === 'object' && x !== null ? (prune(x) ?? {}) : x));
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const p = typeof x === 'object' && x !== null && !(x instanceof Uint8Array) && !Array.isArray(x) ? (prune(x) ?? {}) : prune(x);
      if (p !== undefined) out[k] = p;
    }
    return out;
  }
  if (v === 0 || v === '' || v === false || v === null || v === undefined) return undefined;
  return v;
}

/** Canonical bytes of `obj` as message `type`. */
export function encode(type: protobuf.Type, obj: object): Uint8Array {
  return type.encode(type.fromObject(prune(obj) as Record<string, unknown>)).finish();
}

/** Decodes to a plain object with every field present (defaults filled in), bytes as Buffer. */
export function decode<T>(type: protobuf.Type, bytes: Uint8Array): T {
  const m = type.decode(bytes);
  return type.toObject(m, { defaults: true, arrays: true, longs: Number, enums: Number }) as T;
}
