/** The state service's wire messages and state values (src/proto/scabbard.proto). */
import type protobuf from 'protobufjs';
import { loadProto } from '../proto/index.js';

export { encode, decode } from '../proto/circuits.js';

const root = loadProto('scabbard.proto');
const t = (name: string): protobuf.Type => root.lookupType(`cairn.scabbard.${name}`);

export const ScabbardMessage = t('ScabbardMessage');
export const ProposedBatch = t('ProposedBatch');
export const Proposal = t('Proposal');
export const RoundRecord = t('RoundRecord');
export const BatchListMsg = t('BatchListMsg');
export const Setting = t('Setting');
export const ContractRegistryList = t('ContractRegistryList');
export const NamespaceRegistryList = t('NamespaceRegistryList');
// One Sabre payload for the supply-chain contracts and the state service (grid.proto).
const grid = loadProto('grid.proto');
export const SabrePayload = grid.lookupType('cairn.grid.SabrePayload');
export const ExecuteContractAction = grid.lookupType('cairn.grid.ExecuteContractAction');

export const MsgType = {
  CONSENSUS: 1,
  PROPOSED_BATCH: 2,
  NEW_BATCH: 3,
  TOO_MANY_REQUESTS: 10,
  ACCEPTING_REQUESTS: 11,
  CATCH_UP_REQUEST: 1000,
  CATCH_UP_RESPONSE: 1001,
} as const;

export const SabreAct = {
  EXECUTE_CONTRACT: 3,
  CREATE_CONTRACT_REGISTRY: 4,
  DELETE_CONTRACT_REGISTRY: 5,
  UPDATE_CONTRACT_REGISTRY_OWNERS: 6,
  CREATE_NAMESPACE_REGISTRY: 7,
  DELETE_NAMESPACE_REGISTRY: 8,
  UPDATE_NAMESPACE_REGISTRY_OWNERS: 9,
  CREATE_NAMESPACE_REGISTRY_PERMISSION: 10,
  DELETE_NAMESPACE_REGISTRY_PERMISSION: 11,
} as const;

export interface RoundRecordMsg {
  height: number;
  timestampMs: number;
  batches: Buffer;
  stateRoot: string;
  verdicts: string;
}

export interface ScabbardMsg {
  messageType: number;
  consensusMessage: Buffer;
  proposedBatch: { proposal: Buffer; batch: Buffer; serviceId: string; batches: Buffer; timestampMs: number } | null;
  newBatch: Buffer;
  catchUpFrom: number;
  rounds: RoundRecordMsg[];
}

export interface ProposalMsg {
  id: Buffer;
  previousId: Buffer;
  proposalHeight: number;
  summary: Buffer;
  consensusData: Buffer;
}

export interface RegistryMsg {
  name: string;
  versions: unknown[];
  owners: string[];
}

export interface NamespaceRegistryMsg {
  namespace: string;
  owners: string[];
  permissions: Array<{ contractName: string; read: boolean; write: boolean }>;
}

export interface SabrePayloadMsg {
  action: number;
  executeContract: { name: string; version: string; inputs: string[]; outputs: string[]; payload: Buffer } | null;
  createContractRegistry: { name: string; owners: string[] } | null;
  deleteContractRegistry: { name: string } | null;
  updateContractRegistryOwners: { name: string; owners: string[] } | null;
  createNamespaceRegistry: { namespace: string; owners: string[] } | null;
  deleteNamespaceRegistry: { namespace: string } | null;
  updateNamespaceRegistryOwners: { namespace: string; owners: string[] } | null;
  createNamespaceRegistryPermission: { namespace: string; contractName: string; read: boolean; write: boolean } | null;
  deleteNamespaceRegistryPermission: { namespace: string; contractName: string } | null;
}
