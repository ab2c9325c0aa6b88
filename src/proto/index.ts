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
  emptyBytesDefaults(root);
  return root;
}

/** The value a decoded message holds for a `bytes` field that was not on the wire. */
const NO_BYTES = Buffer.alloc(0);

/**
 * protobufjs gives a `bytes` field that is absent from the wire (proto3 leaves an empty value
 * out) the frozen empty *array* of its type defaults, not an empty buffer: a transaction with
 * an empty payload decoded to `payload: []`, which node:crypto refuses to hash. Every
 * singular `bytes` field of `root` decodes to an empty Buffer instead, as a present one does.
 */
function emptyBytesDefaults(ns: protobuf.NamespaceBase): void {
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type) {
      for (const f of nested.fieldsArray) {
        if (f.type !== 'bytes' || f.repeated || f.map) continue;
        f.typeDefault = NO_BYTES;
        f.defaultValue = NO_BYTES;
        (nested.ctor.prototype as Record<string, unknown>)[f.name] = NO_BYTES;
      }
    }
    if (nested instanceof protobuf.Namespace) emptyBytesDefaults(nested);
  }
}

/**
 * A message type that knows the plain shape `T` it decodes to. The shape is a phantom
 * (never set at run time); it lets decode() infer `T` from the type alone.
 */
export type MessageType<T> = protobuf.Type & { readonly __shape?: T };

/** Looks up a message type of a loaded root, tagged with its decoded shape. */
export function messageType<T>(root: protobuf.Root, name: string): MessageType<T> {
  return root.lookupType(name);
}

/**
 * The values of a .proto enum by name, read from the loaded root. `names` lists the
 * names the code uses; a name the .proto lacks fails at load time rather than at use.
 */
export function protoEnum<const N extends string>(root: protobuf.Root, name: string, names: readonly N[]): Readonly<Record<N, number>> {
  const values = root.lookupEnum(name).values;
  const out = {} as Record<N, number>;
  for (const n of names) {
    const v = values[n];
    if (v === undefined) throw new Error(`${name} has no value ${n}`);
    out[n] = v;
  }
  return Object.freeze(out);
}

const root = loadProto('ledger.proto');
const t = <T>(name: string): MessageType<T> => messageType<T>(root, `cairn.${name}`);
/** A message type with no plain shape declared here: decode<T>() is then told T. */
const untyped = (name: string): protobuf.Type => root.lookupType(`cairn.${name}`);

export const TransactionHeader = t<TransactionHeaderMsg>('TransactionHeader');
export const Transaction = t<TransactionMsg>('Transaction');
export const TransactionList = untyped('TransactionList');
export const BatchHeader = t<BatchHeaderMsg>('BatchHeader');
export const Batch = t<BatchMsg>('Batch');
export const BatchList = untyped('BatchList');
export const BlockHeader = t<BlockHeaderMsg>('BlockHeader');
export const Block = t<BlockMsg>('Block');
export const GenesisData = untyped('GenesisData');
export const Event = untyped('Event');
export const EventList = untyped('EventList');
export const StateChange = untyped('StateChange');
export const StateChangeList = untyped('StateChangeList');
export const TransactionReceipt = untyped('TransactionReceipt');
export const Setting = t<SettingMsg>('Setting');
export const SettingsPayload = t<SettingsPayloadMsg>('SettingsPayload');
export const SettingProposal = t<SettingProposalMsg>('SettingProposal');
export const SettingVote = t<SettingVoteMsg>('SettingVote');
export const SettingCandidate = untyped('SettingCandidate');
export const SettingCandidates = t<SettingCandidatesMsg>('SettingCandidates');

/** StateChange.Type: what a receipt's state change did to its address. */
export const StateChangeType = protoEnum(root, 'cairn.StateChange.Type', ['TYPE_UNSET', 'SET', 'DELETE']);
/** SettingsPayload.Action. */
export const SettingsAction = protoEnum(root, 'cairn.SettingsPayload.Action', ['ACTION_UNSET', 'PROPOSE', 'VOTE']);
/** SettingVote.Vote. */
export const SettingVoteValue = protoEnum(root, 'cairn.SettingVote.Vote', ['VOTE_UNSET', 'ACCEPT', 'REJECT']);

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

export interface SettingEntryMsg {
  key: string;
  value: string;
}
export interface SettingMsg {
  entries: SettingEntryMsg[];
}
export interface SettingsPayloadMsg {
  action: number;
  data: Uint8Array;
}
export interface SettingProposalMsg {
  setting: string;
  value: string;
  nonce: string;
}
export interface SettingVoteMsg {
  proposalId: string;
  vote: number;
}
export interface SettingVoteRecordMsg {
  publicKey: string;
  vote: number;
}
export interface SettingCandidateMsg {
  proposalId: string;
  proposal: SettingProposalMsg;
  votes: SettingVoteRecordMsg[];
}
export interface SettingCandidatesMsg {
  candidates: SettingCandidateMsg[];
}

/**
 * Decodes `bytes` as a message of `type` into its plain shape: `T` comes from a typed
 * MessageType, or is named at the call for an untyped one. Throws on malformed bytes.
 */
export function decode<T>(type: MessageType<T>, bytes: Uint8Array): T {
  // protobufjs returns a generic Message whose fields TypeScript cannot see; the loaded
  // .proto guarantees the camelCased fields of T. The one cast of a decoded message.
  return type.decode(bytes) as unknown as T;
}

export function encode(type: protobuf.Type, obj: object): Uint8Array {
  return type.encode(type.fromObject(obj)).finish();
}
