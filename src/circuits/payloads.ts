/**
 * Builds and signs CircuitManagementPayloads as upstream's CLI does: serialize the action, SHA-512 it into the header, sign the header
 * bytes (SHA-256, compact secp256k1), then serialize the payload.
 */
import { createHash } from 'node:crypto';
import type { Signer } from '../crypto/secp256k1.js';
import {
  Action,
  AuthorizationType,
  CircuitCreateRequest,
  CircuitIdRequest,
  CircuitManagementPayload,
  CircuitProposalVote,
  PayloadHeader,
  Status,
  Vote,
  encode,
} from '../proto/circuits.js';

export interface MemberSpec {
  node_id: string;
  endpoints: string[];
  /** Hex peering key (required for challenge circuits). */
  public_key?: string;
}

export interface ServiceSpec {
  service_id: string;
  service_type: string;
  node_id: string;
  arguments: Array<[string, string]>;
}

export interface CircuitSpec {
  circuit_id: string;
  members: MemberSpec[];
  roster: ServiceSpec[];
  management_type: string;
  authorization_type?: 'trust' | 'challenge';
  display_name?: string;
  comments?: string;
  application_metadata?: Uint8Array;
  circuit_version?: number;
}

function sign(signer: Signer, nodeId: string, action: number, field: string, message: object, type: Parameters<typeof encode>[0]): Uint8Array {
  const actionBytes = encode(type, message);
  const header = encode(PayloadHeader, {
    action,
    requester: Buffer.from(signer.publicKey, 'hex'),
    payloadSha512: createHash('sha512').update(actionBytes).digest(),
    requesterNodeId: nodeId,
  });
  const signature = Buffer.from(signer.sign(header), 'hex');
  return encode(CircuitManagementPayload, { header, signature, [field]: message });
}

export function circuitMessage(spec: CircuitSpec): object {
  return {
    circuitId: spec.circuit_id,
    roster: spec.roster.map((s) => ({
      serviceId: s.service_id,
      serviceType: s.service_type,
      allowedNodes: [s.node_id],
      arguments: s.arguments.map(([key, value]) => ({ key, value })),
    })),
    members: spec.members.map((m) => ({
      nodeId: m.node_id,
      endpoints: m.endpoints,
      publicKey: m.public_key ? Buffer.from(m.public_key, 'hex') : undefined,
    })),
    authorizationType: spec.authorization_type === 'challenge' ? AuthorizationType.CHALLENGE : AuthorizationType.TRUST,
    persistence: 1,
    durability: 1,
    routes: 1,
    circuitManagementType: spec.management_type,
    applicationMetadata: spec.application_metadata,
    comments: spec.comments,
    displayName: spec.display_name,
    circuitVersion: spec.circuit_version ?? 2,
    circuitStatus: Status.ACTIVE,
  };
}

export function createPayload(signer: Signer, nodeId: string, spec: CircuitSpec): Uint8Array {
  return sign(signer, nodeId, Action.CREATE, 'circuitCreateRequest', { circuit: circuitMessage(spec) }, CircuitCreateRequest);
}

export function votePayload(signer: Signer, nodeId: string, circuitId: string, circuitHash: string, accept: boolean): Uint8Array {
  return sign(
    signer,
    nodeId,
    Action.VOTE,
    'circuitProposalVote',
    { circuitId, circuitHash, vote: accept ? Vote.ACCEPT : Vote.REJECT },
    CircuitProposalVote,
  );
}

const ID_ACTIONS = {
  disband: [Action.DISBAND, 'circuitDisbandRequest'],
  abandon: [Action.ABANDON, 'circuitAbandon'],
  purge: [Action.PURGE, 'circuitPurgeRequest'],
  'remove-proposal': [Action.REMOVE_PROPOSAL, 'proposalRemoveRequest'],
} as const;

export type IdAction = keyof typeof ID_ACTIONS;

export function idPayload(signer: Signer, nodeId: string, what: IdAction, circuitId: string): Uint8Array {
  const [action, field] = ID_ACTIONS[what];
  return sign(signer, nodeId, action, field, { circuitId }, CircuitIdRequest);
}
