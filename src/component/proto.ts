/**
 * The component endpoint's wire messages (src/proto/validator.proto): the envelope and the
 * transaction processor messages, with the enum values the code uses.
 */
import type protobuf from 'protobufjs';
import { loadProto, protoEnum } from '../proto/index.js';

const root = loadProto('validator.proto');
const t = (name: string): protobuf.Type => root.lookupType(`cairn.component.${name}`);

export const Envelope = t('Envelope');
export const RegisterRequest = t('RegisterRequest');
export const RegisterResponse = t('RegisterResponse');
export const UnregisterRequest = t('UnregisterRequest');
export const UnregisterResponse = t('UnregisterResponse');
export const ProcessRequest = t('ProcessRequest');
export const ProcessResponse = t('ProcessResponse');
export const StateGetRequest = t('StateGetRequest');
export const StateGetResponse = t('StateGetResponse');
export const StateSetRequest = t('StateSetRequest');
export const StateSetResponse = t('StateSetResponse');
export const StateDeleteRequest = t('StateDeleteRequest');
export const StateDeleteResponse = t('StateDeleteResponse');
export const ReceiptAddDataRequest = t('ReceiptAddDataRequest');
export const ReceiptAddDataResponse = t('ReceiptAddDataResponse');
export const EventAddRequest = t('EventAddRequest');
export const EventAddResponse = t('EventAddResponse');
export const PingRequest = t('PingRequest');
export const PingResponse = t('PingResponse');
export const NetworkAcknowledgement = t('NetworkAcknowledgement');
export const EventSubscription = t('EventSubscription');
export const ClientEventsSubscribeRequest = t('ClientEventsSubscribeRequest');
export const ClientEventsSubscribeResponse = t('ClientEventsSubscribeResponse');
export const ClientEventsUnsubscribeResponse = t('ClientEventsUnsubscribeResponse');
export const ClientEventsGetRequest = t('ClientEventsGetRequest');
export const ClientEventsGetResponse = t('ClientEventsGetResponse');
export const BatchSubmitResponse = t('BatchSubmitResponse');
export const BatchStatusRequest = t('BatchStatusRequest');
export const BatchStatusResponse = t('BatchStatusResponse');
export const IdRequest = t('IdRequest');
export const BlockGetByNumRequest = t('BlockGetByNumRequest');
export const GetResponse = t('GetResponse');
export const ListRequest = t('ListRequest');
export const ListResponse = t('ListResponse');
export const StateGetRequest2 = t('StateGetRequest2');
export const StateGetResponse2 = t('StateGetResponse2');
export const StateListRequest = t('StateListRequest');
export const StateListResponse = t('StateListResponse');
export const ReceiptGetRequest = t('ReceiptGetRequest');
export const ReceiptGetResponse = t('ReceiptGetResponse');
export const PeersGetResponse = t('PeersGetResponse');
export const StatusGetResponse = t('StatusGetResponse');

export const Kind = protoEnum(root, 'cairn.component.Envelope.Kind', [
  'DEFAULT',
  'TP_REGISTER_REQUEST',
  'TP_REGISTER_RESPONSE',
  'TP_UNREGISTER_REQUEST',
  'TP_UNREGISTER_RESPONSE',
  'TP_PROCESS_REQUEST',
  'TP_PROCESS_RESPONSE',
  'TP_STATE_GET_REQUEST',
  'TP_STATE_GET_RESPONSE',
  'TP_STATE_SET_REQUEST',
  'TP_STATE_SET_RESPONSE',
  'TP_STATE_DELETE_REQUEST',
  'TP_STATE_DELETE_RESPONSE',
  'TP_RECEIPT_ADD_DATA_REQUEST',
  'TP_RECEIPT_ADD_DATA_RESPONSE',
  'TP_EVENT_ADD_REQUEST',
  'TP_EVENT_ADD_RESPONSE',
  'PING_REQUEST',
  'PING_RESPONSE',
  'NETWORK_ACK',
  'CLIENT_BATCH_SUBMIT_REQUEST',
  'CLIENT_BATCH_SUBMIT_RESPONSE',
  'CLIENT_BLOCK_LIST_REQUEST',
  'CLIENT_BLOCK_LIST_RESPONSE',
  'CLIENT_BLOCK_GET_BY_ID_REQUEST',
  'CLIENT_BLOCK_GET_RESPONSE',
  'CLIENT_BATCH_LIST_REQUEST',
  'CLIENT_BATCH_LIST_RESPONSE',
  'CLIENT_BATCH_GET_REQUEST',
  'CLIENT_BATCH_GET_RESPONSE',
  'CLIENT_TRANSACTION_LIST_REQUEST',
  'CLIENT_TRANSACTION_LIST_RESPONSE',
  'CLIENT_TRANSACTION_GET_REQUEST',
  'CLIENT_TRANSACTION_GET_RESPONSE',
  'CLIENT_STATE_CURRENT_REQUEST',
  'CLIENT_STATE_CURRENT_RESPONSE',
  'CLIENT_STATE_LIST_REQUEST',
  'CLIENT_STATE_LIST_RESPONSE',
  'CLIENT_STATE_GET_REQUEST',
  'CLIENT_STATE_GET_RESPONSE',
  'CLIENT_BATCH_STATUS_REQUEST',
  'CLIENT_BATCH_STATUS_RESPONSE',
  'CLIENT_RECEIPT_GET_REQUEST',
  'CLIENT_RECEIPT_GET_RESPONSE',
  'CLIENT_BLOCK_GET_BY_NUM_REQUEST',
  'CLIENT_PEERS_GET_REQUEST',
  'CLIENT_PEERS_GET_RESPONSE',
  'CLIENT_BLOCK_GET_BY_TRANSACTION_ID_REQUEST',
  'CLIENT_BLOCK_GET_BY_BATCH_ID_REQUEST',
  'CLIENT_STATUS_GET_REQUEST',
  'CLIENT_STATUS_GET_RESPONSE',
  'CLIENT_EVENTS_SUBSCRIBE_REQUEST',
  'CLIENT_EVENTS_SUBSCRIBE_RESPONSE',
  'CLIENT_EVENTS_UNSUBSCRIBE_REQUEST',
  'CLIENT_EVENTS_UNSUBSCRIBE_RESPONSE',
  'CLIENT_EVENTS',
  'CLIENT_EVENTS_GET_REQUEST',
  'CLIENT_EVENTS_GET_RESPONSE',
]);
export const HeaderStyle = protoEnum(root, 'cairn.component.RegisterRequest.HeaderStyle', ['HEADER_STYLE_UNSET', 'EXPANDED', 'RAW']);
export const AckStatus = protoEnum(root, 'cairn.component.RegisterResponse.Status', ['STATUS_UNSET', 'OK', 'ERROR']);
export const ProcessStatus = protoEnum(root, 'cairn.component.ProcessResponse.Status', [
  'STATUS_UNSET',
  'OK',
  'INVALID_TRANSACTION',
  'INTERNAL_ERROR',
]);
export const FilterType = protoEnum(root, 'cairn.component.EventFilter.FilterType', [
  'FILTER_TYPE_UNSET',
  'SIMPLE_ANY',
  'SIMPLE_ALL',
  'REGEX_ANY',
  'REGEX_ALL',
]);
export const SubscribeStatus = protoEnum(root, 'cairn.component.ClientEventsSubscribeResponse.Status', ['OK', 'INVALID_FILTER', 'UNKNOWN_BLOCK']);
export const EventsGetStatus = protoEnum(root, 'cairn.component.ClientEventsGetResponse.Status', [
  'OK',
  'INTERNAL_ERROR',
  'INVALID_FILTER',
  'UNKNOWN_BLOCK',
]);
export const StateStatus = protoEnum(root, 'cairn.component.StateGetResponse.Status', ['STATUS_UNSET', 'OK', 'AUTHORIZATION_ERROR']);

/** Decoded shapes (protobufjs camelCases field names). */
export interface EnvelopeMsg {
  messageType: number;
  correlationId: string;
  content: Uint8Array;
}

/**
 * Decodes an envelope (throws on malformed protobuf). An envelope without content (a client
 * request with no fields, a submit with no batches) has an empty Uint8Array as its content
 * (src/proto/index.ts gives every absent bytes field one), never protobufjs's empty Array.
 */
export function decodeEnvelope(bytes: Uint8Array): EnvelopeMsg {
  const m = Envelope.decode(bytes) as unknown as EnvelopeMsg;
  return { messageType: m.messageType, correlationId: m.correlationId, content: m.content };
}

export interface RegisterRequestMsg {
  family: string;
  version: string;
  namespaces: string[];
  maxOccupancy: number;
  protocolVersion: number;
  requestHeaderStyle: number;
}
export interface ProcessResponseMsg {
  status: number;
  message: string;
  extendedData: Uint8Array;
}
export interface StateEntryMsg {
  address: string;
  data: Uint8Array;
}
export interface ContextAddressesMsg {
  contextId: string;
  addresses: string[];
}
export interface StateSetRequestMsg {
  contextId: string;
  entries: StateEntryMsg[];
}
export interface ReceiptAddDataRequestMsg {
  contextId: string;
  data: Uint8Array;
}
export interface EventAddRequestMsg {
  contextId: string;
  event: { eventType: string; attributes: Array<{ key: string; value: string }>; data: Uint8Array } | null;
}
export interface EventFilterMsg {
  key: string;
  matchString: string;
  filterType: number;
}
export interface EventSubscriptionMsg {
  eventType: string;
  filters: EventFilterMsg[];
}
export interface ClientEventsSubscribeRequestMsg {
  subscriptions: EventSubscriptionMsg[];
  lastKnownBlockIds: string[];
}
export interface ClientEventsGetRequestMsg {
  subscriptions: EventSubscriptionMsg[];
  blockIds: string[];
}
