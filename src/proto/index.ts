/**
 * Loads Cairn's .proto definitions once per thread with protobufjs and exposes the
 * message types. protobufjs compiles an encoder/decoder per type on first use.
 */
import protobuf from 'protobufjs';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));

/** Finds a .proto file next to this module, or in src/proto when running from dist/. */
export function protoPath(name: string): string {
  const local = join(here, name);
  if (existsSync(local)) return local;
  return join(here, '..', '..', '..', 'src', 'proto', name);
}

export function loadProto(name: string): protobuf.Root {
  // Field names are camelCased by protobufjs; the REST layer maps them back to snake_case.
  const root = protobuf.loadSync(protoPath(name), new protobuf.Root());
  root.resolveAll();
  return root;
}

const root = loadProto('ledger.proto');
const t = (name: string): protobuf.Type => root.lookupType(`cairn.${name}`);

export const TransactionHeader = t('TransactionHeader');
export const Transaction = t('Transaction');
export const TransactionList = t('TransactionList');
export const BatchHeader = t('BatchHeader');
export const Batch = t('Batch');
export const BatchList = t('BatchList');
export const BlockHeader = t('BlockHeader');
export const Block = t('Block');
export const GenesisData = t('GenesisData');
export const Event = t('Event');
export const EventList = t('EventList');
export const StateChange = t('StateChange');
export const StateChangeList = t('StateChangeList');
export const TransactionReceipt = t('TransactionReceipt');
export const Setting = t('Setting');
export const SettingsPayload = t('SettingsPayload');
export const SettingProposal = t('SettingProposal');
export const SettingVote = t('SettingVote');
export const SettingCandidate = t('SettingCandidate');
export const SettingCandidates = t('SettingCandidates');

/** Plain shapes of the decoded messages (protobufjs camelCases field names). */
export interface TransactionHeaderMsg {
  batcherPublicKey: string;
  dependencies: string[];
  familyName: string;
  familyVersion: string;
  inputs: string[];
  nonce: string;
  outputs: string[];
  payloadSha512: string;
  signerPublicKey: string;
}
export interface TransactionMsg {
  header: Uint8Array;
  headerSignature: string;
  payload: Uint8Array;
}
export interface BatchHeaderMsg {
  signerPublicKey: string;
  transactionIds: string[];
}
export interface BatchMsg {
  header: Uint8Array;
  headerSignature: string;
  transactions: TransactionMsg[];
  trace: boolean;
}
export interface BlockHeaderMsg {
  blockNum: number | Long;
  previousBlockId: string;
  signerPublicKey: string;
  batchIds: string[];
  consensus: Uint8Array;
  stateRootHash: string;
}
export interface BlockMsg {
  header: Uint8Array;
  headerSignature: string;
  batches: BatchMsg[];
}
type Long = { low: number; high: number; unsigned: boolean };

export function decode<T>(type: protobuf.Type, bytes: Uint8Array): T {
  return type.decode(bytes) as unknown as T;
}

export function encode(type: protobuf.Type, obj: object): Uint8Array {
  return type.encode(type.fromObject(obj)).finish();
}
