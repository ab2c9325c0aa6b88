/**
 * The ledger gateway's error catalog (src/http/errors.ts says how catalogs work): upstream
 * Sawtooth REST codes, HTTP statuses and titles (`upstream`: the class of
 * sawtooth_rest_api/exceptions.py), and this gateway's own errors (GATEWAY_ERRORS).
 * Body: {"error": {"code", "message", "title"}} and nothing else. Errors the upstream
 * gateway answers in plain text (unknown path, wrong method, oversized body, crash: the
 * server's HTTP_ERRORS) and the gateway's own use the same shape here, with the HTTP
 * status as the code.
 */
import type { ApiError } from '../http/api-error.js';
import { catalog, errorWithMessage, type ErrorDef } from '../http/errors.js';
import type { Reply } from '../http/types.js';

export const LEDGER_ERRORS = {
  10: {
    status: 500,
    title: 'Unknown Validator Error',
    message: 'An unknown error occurred in the validator while processing the request',
    upstream: 'UnknownValidatorError',
    code: 10,
  },
  15: {
    status: 503,
    title: 'Validator Not Ready',
    message: 'The validator has no genesis block yet and is not ready to be queried',
    upstream: 'ValidatorNotReady',
    code: 15,
  },
  17: { status: 503, title: 'Validator Timed Out', message: 'The request could not be answered in time', upstream: 'ValidatorTimedOut', code: 17 },
  18: {
    status: 503,
    title: 'Validator Disconnected',
    message: 'The validator went away while the request was being processed',
    upstream: 'ValidatorDisconnected',
    code: 18,
  },
  19: {
    status: 408,
    title: 'Send timed out',
    message: 'The request could not be sent to the validator in time',
    upstream: 'SendBackoffTimeout',
    code: 19,
  },
  20: {
    status: 500,
    title: 'Invalid Validator Response',
    message: 'The validator sent a response that could not be decoded',
    upstream: 'ValidatorResponseInvalid',
    code: 20,
  },
  21: {
    status: 500,
    title: 'Invalid Resource Header',
    message: 'A stored block, batch or transaction has a header that could not be decoded',
    upstream: 'ResourceHeaderInvalid',
    code: 21,
  },
  27: { status: 500, title: 'Unable to Fetch Statuses', message: 'No batch statuses could be fetched', upstream: 'StatusResponseMissing', code: 27 },
  30: {
    status: 400,
    title: 'Submitted Batches Invalid',
    message: 'The submitted BatchList was rejected: it was poorly formed or has an invalid signature',
    upstream: 'SubmittedBatchesInvalid',
    code: 30,
  },
  31: {
    status: 429,
    title: 'Unable to Accept Batches',
    message: 'The validator cannot accept more batches now because its queue is full. Please submit your request again later',
    upstream: 'BatchQueueFull',
    code: 31,
  },
  34: {
    status: 400,
    title: 'No Batches Submitted',
    message: 'The protobuf BatchList was empty. It must contain at least one Batch',
    upstream: 'NoBatchesSubmitted',
    code: 34,
  },
  35: {
    status: 400,
    title: 'Protobuf Not Decodable',
    message: 'The body could not be decoded as a protobuf BatchList',
    upstream: 'BadProtobufSubmitted',
    code: 35,
  },
  42: {
    status: 400,
    title: 'Wrong Content Type',
    message: "Batches must be submitted as a BatchList protobuf with Content-Type 'application/octet-stream'",
    upstream: 'SubmissionWrongContentType',
    code: 42,
  },
  43: {
    status: 400,
    title: 'Wrong Content Type',
    message: "Batch status requests in a POST body must have Content-Type 'application/json'",
    upstream: 'StatusWrongContentType',
    code: 43,
  },
  46: {
    status: 400,
    title: 'Bad Status Request',
    message: 'A batch status request body must be a non-empty JSON array of batch id strings',
    upstream: 'StatusBodyInvalid',
    code: 46,
  },
  50: { status: 404, title: 'Head Not Found', message: 'No block with the requested head id exists', upstream: 'HeadNotFound', code: 50 },
  53: { status: 400, title: 'Invalid Count Query', message: "The 'limit' query must be a positive integer", upstream: 'CountInvalid', code: 53 },
  54: {
    status: 400,
    title: 'Invalid Paging Query',
    message: "The paging 'start' does not name an item of this list",
    upstream: 'PagingInvalid',
    code: 54,
  },
  57: {
    status: 400,
    title: 'Invalid Sort Query',
    message: "The 'reverse' query must be empty, 'false', or the list's sort key",
    upstream: 'SortInvalid',
    code: 57,
  },
  60: {
    status: 400,
    title: 'Invalid Resource Id',
    message: 'Ids must be 128 lowercase hex characters. Invalid id: ',
    upstream: 'InvalidResourceId',
    code: 60,
  },
  62: {
    status: 400,
    title: 'Invalid State Address',
    message: 'State addresses must be an even number of lowercase hex characters, at most 70',
    upstream: 'InvalidStateAddress',
    code: 62,
  },
  66: {
    status: 400,
    title: 'Id Query Invalid or Missing',
    message: "The 'id' query is required: a comma-separated list of batch ids",
    upstream: 'StatusIdQueryInvalid',
    code: 66,
  },
  70: { status: 404, title: 'Block Not Found', message: 'No block with that id exists', upstream: 'BlockNotFound', code: 70 },
  71: { status: 404, title: 'Batch Not Found', message: 'No committed batch with that id exists', upstream: 'BatchNotFound', code: 71 },
  72: {
    status: 404,
    title: 'Transaction Not Found',
    message: 'No committed transaction with that id exists',
    upstream: 'TransactionNotFound',
    code: 72,
  },
  75: { status: 404, title: 'State Not Found', message: 'No state leaf exists at that address', upstream: 'StateNotFound', code: 75 },
  80: {
    status: 404,
    title: 'Transaction Receipt Not Found',
    message: 'No receipt exists for one or more of the requested transaction ids',
    upstream: 'ReceiptNotFound',
    code: 80,
  },
  81: {
    status: 400,
    title: 'Wrong Content Type',
    message: "Receipt requests in a POST body must have Content-Type 'application/json'",
    upstream: 'ReceiptWrongContentType',
    code: 81,
  },
  82: {
    status: 400,
    title: 'Bad Receipts Request',
    message: 'A receipts request body must be a non-empty JSON array of transaction id strings',
    upstream: 'ReceiptBodyInvalid',
    code: 82,
  },
  83: {
    status: 400,
    title: 'Id Query Invalid or Missing',
    message: "The 'id' query is required: a comma-separated list of transaction ids",
    upstream: 'ReceiptIdQueryInvalid',
    code: 83,
  },
} as const satisfies Record<number, ErrorDef & { code: number }>;

/** The codes by name, for call sites: `throw ledgerError(LedgerErrorCode.BlockNotFound, ...)`. */
export const LedgerErrorCode = {
  UnknownValidatorError: 10,
  ValidatorNotReady: 15,
  ValidatorTimedOut: 17,
  ValidatorDisconnected: 18,
  SendTimedOut: 19,
  InvalidValidatorResponse: 20,
  InvalidResourceHeader: 21,
  UnableToFetchStatuses: 27,
  SubmittedBatchesInvalid: 30,
  UnableToAcceptBatches: 31,
  NoBatchesSubmitted: 34,
  ProtobufNotDecodable: 35,
  WrongContentTypeBatches: 42,
  WrongContentTypeStatuses: 43,
  BadStatusRequest: 46,
  HeadNotFound: 50,
  InvalidCountQuery: 53,
  InvalidPagingQuery: 54,
  InvalidSortQuery: 57,
  InvalidResourceId: 60,
  InvalidStateAddress: 62,
  StatusIdQueryInvalid: 66,
  BlockNotFound: 70,
  BatchNotFound: 71,
  TransactionNotFound: 72,
  StateNotFound: 75,
  ReceiptNotFound: 80,
  WrongContentTypeReceipts: 81,
  BadReceiptsRequest: 82,
  ReceiptIdQueryInvalid: 83,
} as const satisfies Record<string, keyof typeof LEDGER_ERRORS>;

export type LedgerErrorCode = (typeof LedgerErrorCode)[keyof typeof LedgerErrorCode];

/**
 * The titles of errors without a numbered code (the body's code is the HTTP status): the
 * server's and this gateway's own. Other statuses are titled 'Error'.
 */
export const GENERIC_TITLES: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Request Entity Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** The gateway's own errors (not in upstream's table): titled by their HTTP status (GENERIC_TITLES). */
export const GATEWAY_ERRORS = {
  subscriptionsFull: {
    status: 503,
    title: 'Service Unavailable',
    message: 'Too many open subscriptions ({max}); try again later',
    upstream: null,
  },
  subscriptionsNotWebsocket: {
    status: 400,
    title: 'Bad Request',
    message: 'GET /subscriptions is a websocket endpoint: send an Upgrade: websocket request',
    upstream: null,
  },
  stateCorrupt: {
    status: 503,
    title: 'Service Unavailable',
    message: 'The stored state failed its integrity check and is not served; the node needs an operator (see the Durability section of the README)',
    upstream: null,
  },
  explorerBadEncoding: { status: 400, title: 'Bad Request', message: 'The explorer path is not valid percent-encoding', upstream: null },
  explorerNoFileName: { status: 400, title: 'Bad Request', message: 'The explorer path names no file', upstream: null },
  explorerFileNotFound: { status: 404, title: 'Not Found', message: 'No explorer file {name}', upstream: null },
} as const satisfies Record<string, ErrorDef>;

export const gatewayErrors = catalog(GATEWAY_ERRORS);

/**
 * A ledger gateway error by code; `extra` is appended to (or replaces) the message, as
 * upstream appends its `additional_info`.
 */
export function ledgerError(code: LedgerErrorCode, extra?: string, replace = false): ApiError {
  const def = LEDGER_ERRORS[code];
  return errorWithMessage(def, extra === undefined ? def.message : replace ? extra : `${def.message}${extra}`);
}

function errorBody(code: number, message: string, title: string): string {
  return JSON.stringify({ error: { code, message, title } });
}

export function ledgerErrorReplyFactory(): (status: number, message: string, code?: number) => Reply {
  return (status, message, code) => {
    if (code !== undefined && Object.hasOwn(LEDGER_ERRORS, code)) {
      const def = LEDGER_ERRORS[code as keyof typeof LEDGER_ERRORS];
      return { status: def.status, body: errorBody(code, message, def.title) };
    }
    return { status, body: errorBody(status, message, GENERIC_TITLES[status] ?? 'Error') };
  };
}
