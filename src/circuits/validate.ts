/**
 * Checks on circuit management payloads:
 * the envelope (header, requester key, signature, payload hash) and the rules of each
 * action. Every member runs the action rules against its own store and registry.
 */
import { createHash } from 'node:crypto';
import { verify } from '../crypto/secp256k1.js';
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
  decode,
  encode,
  type CircuitMsg,
  type HeaderMsg,
  type PayloadMsg,
} from '../proto/circuits.js';

export class ValidationError extends Error {}
const fail = (m: string): never => {
  throw new ValidationError(m);
};

export const sha256Hex = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

export interface Envelope {
  payload: PayloadMsg;
  header: HeaderMsg;
  /** Canonical bytes of the whole payload (its proposal id is their SHA-256). */
  bytes: Uint8Array;
  requesterHex: string;
}

const ACTION_NAMES: Record<number, string> = {
  3: 'CIRCUIT_UPDATE_ROSTER_REQUEST',
  4: 'CIRCUIT_UPDATE_ADD_NODE',
  5: 'CIRCUIT_UPDATE_REMOVE_NODE',
  6: 'CIRCUIT_UPDATE_APPLICATION_METADATA_REQUEST',
  7: 'CIRCUIT_JOIN_REQUEST',
};

/** The bytes of the action the header names, as the client serialized them (canonical form). */
function actionBytes(p: PayloadMsg, action: number): Uint8Array {
  switch (action) {
    case Action.VOTE:
      return p.circuitProposalVote
        ? encode(CircuitProposalVote, p.circuitProposalVote)
        : fail('CircuitManagementPayload is missing its circuit_proposal_vote');
    case Action.CREATE:
      return p.circuitCreateRequest
        ? encode(CircuitCreateRequest, p.circuitCreateRequest)
        : fail('CircuitManagementPayload is missing its circuit_create_request');
    case Action.DISBAND:
      return p.circuitDisbandRequest
        ? encode(CircuitIdRequest, p.circuitDisbandRequest)
        : fail('CircuitManagementPayload is missing its circuit_disband_request');
    case Action.PURGE:
      return p.circuitPurgeRequest
        ? encode(CircuitIdRequest, p.circuitPurgeRequest)
        : fail('CircuitManagementPayload is missing its circuit_purge_request');
    case Action.ABANDON:
      return p.circuitAbandon ? encode(CircuitIdRequest, p.circuitAbandon) : fail('CircuitManagementPayload is missing its circuit_abandon');
    case Action.REMOVE_PROPOSAL:
      return p.proposalRemoveRequest
        ? encode(CircuitIdRequest, p.proposalRemoveRequest)
        : fail('CircuitManagementPayload is missing its proposal_remove_request');
    case 0:
      return fail('No action specified');
    default:
      return fail(`Unable to handle ${ACTION_NAMES[action] ?? `action ${action}`}`);
  }
}

/** Decodes a payload; a malformed one is a ValidationError with "Failed to parse payload". */
export function parsePayload(bytes: Uint8Array): PayloadMsg {
  try {
    return decode<PayloadMsg>(CircuitManagementPayload, bytes);
  } catch (err) {
    throw new ValidationError(`Failed to parse payload: ${(err as Error).message}`);
  }
}

/**
 * Envelope checks: signature and header set, requester a 33-byte key, requester node id
 * set, the signature valid over the header bytes, and payload_sha512 equal to SHA-512 of
 * the action. (Upstream checks neither of the last two; see docs/circuits.md.)
 */
export function checkEnvelope(payload: PayloadMsg): Envelope {
  if (payload.signature.length === 0) fail('CircuitManagementPayload signature must be set');
  if (payload.header.length === 0) fail('CircuitManagementPayload header must be set');
  let header: HeaderMsg;
  try {
    header = decode<HeaderMsg>(PayloadHeader, payload.header);
  } catch (err) {
    throw new ValidationError(`Failed to parse payload: header: ${(err as Error).message}`);
  }
  if (header.requester.length === 0) fail('CircuitManagementPayload must have a requester');
  const requesterHex = hex(header.requester);
  if (header.requester.length !== 33) fail(`${requesterHex} is not a valid public key: invalid length`);
  if (header.requesterNodeId === '') fail('CircuitManagementPayload must have a requester node id');
  if (!verify(hex(payload.signature), payload.header, requesterHex)) fail('CircuitManagementPayload signature is not valid for the requester key');
  const action = actionBytes(payload, header.action);
  const digest = createHash('sha512').update(action).digest();
  if (!digest.equals(Buffer.from(header.payloadSha512))) fail('CircuitManagementPayload payload_sha512 does not match the action');
  return { payload, header, bytes: encode(CircuitManagementPayload, payload), requesterHex };
}

const CIRCUIT_ID = /^[A-Za-z0-9]{5}-[A-Za-z0-9]{5}$/;
const SERVICE_ID = /^[A-Za-z0-9]{4}$/;
const PUBKEY = /^0[23][0-9a-f]{64}$/;

/** Whether `id` has the shape of a circuit id (every stored circuit's id has it). */
export const isCircuitId = (id: string): boolean => CIRCUIT_ID.test(id);

function listArg(v: string): string[] {
  const s = v.trim();
  if (s.startsWith('[')) {
    try {
      const a = JSON.parse(s) as unknown;
      if (Array.isArray(a) && a.every((x) => typeof x === 'string')) return a as string[];
    } catch {
      // falls through to the error below
    }
    return fail(`argument is not a JSON list of strings: ${s.slice(0, 80)}`);
  }
  return s === '' ? [] : s.split(',');
}

/** The create rules on the proposed circuit (local node must be a member). */
export function checkCircuit(c: CircuitMsg | null | undefined, localNode: string): CircuitMsg {
  if (!c) return fail('CircuitCreateRequest must have a circuit');
  if (c.circuitVersion > 2) fail(`Proposed circuit's schema version is unsupported: ${c.circuitVersion}`);
  if (c.authorizationType === 0) fail('authorization_type cannot be unset');
  if (c.persistence === 0) fail('persistence_type cannot be unset');
  if (c.durability === 0) fail('durability_type cannot be unset');
  if (c.routes === 0) fail('route_type cannot be unset');
  if (c.circuitId === '') fail('circuit_id must be set');
  if (!CIRCUIT_ID.test(c.circuitId))
    fail(
      `'${c.circuitId.slice(0, 40)}' is not a valid circuit ID: must be an 11 character string composed of two, 5 character base62 strings joined with a '-' (example: abcDE-F0123)`,
    );
  if (c.circuitManagementType === '') fail('circuit_management_type must be set');
  if (c.circuitStatus !== Status.UNSET && c.circuitStatus !== Status.ACTIVE) fail('A proposed circuit must be Active');
  if (c.authorizationType === AuthorizationType.CHALLENGE && c.circuitVersion < 2) fail('Challenge authorization requires circuit version 2');
  if (c.members.length === 0) fail('The circuit must have members');
  const ids = new Set<string>();
  const endpoints = new Set<string>();
  for (const m of c.members) {
    if (m.nodeId === '') fail('Member node id cannot be empty');
    if (ids.has(m.nodeId)) fail('Every member must be unique in the circuit.');
    ids.add(m.nodeId);
    if (m.endpoints.length === 0) fail('Member endpoints cannot be empty');
    for (const e of m.endpoints) {
      if (e === '') fail('Member cannot have an empty endpoint');
      if (endpoints.has(e)) fail('Every member endpoint must be unique in the circuit.');
      endpoints.add(e);
    }
    if (c.authorizationType === AuthorizationType.CHALLENGE && m.publicKey.length !== 33)
      fail('All members must have public keys if authorization type is challenge');
  }
  if (!ids.has(localNode)) fail(`Circuit does not contain this node: ${localNode}`);
  if (c.roster.length === 0) fail('The circuit must have services');
  const services = new Set<string>();
  for (const s of c.roster) {
    if (s.serviceId === '') fail('Service id cannot be empty');
    if (!SERVICE_ID.test(s.serviceId)) fail(`'${s.serviceId.slice(0, 40)}' is not a valid service ID: must be a 4 character base62 string`);
    if (services.has(s.serviceId)) fail('Every service must be unique in the circuit.');
    services.add(s.serviceId);
    if (s.allowedNodes.length === 0) fail('Service cannot have an empty allowed nodes list');
    if (s.allowedNodes.length > 1) fail('Only one allowed node for a service is supported');
    if (!ids.has(s.allowedNodes[0]!)) fail(`Service cannot have an allowed node that is not in members: ${s.allowedNodes[0]}`);
    if (s.serviceType === 'scabbard') {
      const a = new Map(s.arguments.map((x) => [x.key, x.value]));
      if (!a.has('peer_services')) fail('peer_services argument is required');
      if (!a.has('admin_keys')) fail('admin_keys argument is required');
      for (const k of listArg(a.get('admin_keys')!)) if (!PUBKEY.test(k)) fail(`invalid admin key: ${k.slice(0, 80)}`);
      for (const p of listArg(a.get('peer_services')!)) if (p === '') fail('peer_services entries cannot be empty');
    }
  }
  return c;
}

export function voteOf(v: number): number {
  if (v !== Vote.ACCEPT && v !== Vote.REJECT) fail('Vote must be Accept or Reject');
  return v;
}
