/**
 * The ledger gateway's error table: upstream Sawtooth REST codes, HTTP statuses and titles.
 * Body: {"error": {"code", "message", "title"}} and nothing else. Errors the upstream
 * gateway answers in plain text (unknown path, wrong method, oversized body, crash)
 * use the same shape here, with the HTTP status as the code.
 */
import { ApiError, type Reply } from '../http/server.js';

export interface ErrorDef {
  status: number;
  title: string;
  message: string;
}

export const LEDGER_ERRORS = {
  10: { status: 500, title: 'Unknown Validator Error', message: 'An unknown error occurred in the validator while processing the request' },
  15: { status: 503, title: 'Validator Not Ready', message: 'The validator has no genesis block yet and is not ready to be queried' },
  17: { status: 503, title: 'Validator Timed Out', message: 'The request could not be answered in time' },
  18: { status: 503, title: 'Validator Disconnected', message: 'The validator went away while the request was being processed' },
  19: { status: 408, title: 'Send timed out', message: 'The request could not be sent to the validator in time' },
  20: { status: 500, title: 'Invalid Validator Response', message: 'The validator sent a response that could not be decoded' },
  21: { status: 500, title: 'Invalid Resource Header', message: 'A stored block, batch or transaction has a header that could not be decoded' },
  27: { status: 500, title: 'Unable to Fetch Statuses', message: 'No batch statuses could be fetched' },
  30: {
    status: 400,
    title: 'Submitted Batches Invalid',
    message: 'The submitted BatchList was rejected: it was poorly formed or has an invalid signature',
  },
  31: {
    status: 429,
    title: 'Unable to Accept Batches',
    message: 'The validator cannot accept more batches now because its queue is full. Please submit your request again later',
  },
  34: { status: 400, title: 'No Batches Submitted', message: 'The protobuf BatchList was empty. It must contain at least one Batch' },
  35: { status: 400, title: 'Protobuf Not Decodable', message: 'The body could not be decoded as a protobuf BatchList' },
  42: {
    status: 400,
    title: 'Wrong Content Type',
    message: "Batches must be submitted as a BatchList protobuf with Content-Type 'application/octet-stream'",
  },
  43: { status: 400, title: 'Wrong Content Type', message: "Batch status requests in a POST body must have Content-Type 'application/json'" },
  46: { status: 400, title: 'Bad Status Request', message: 'A batch status request body must be a non-empty JSON array of batch id strings' },
  50: { status: 404, title: 'Head Not Found', message: 'No block with the requested head id exists' },
  53: { status: 400, title: 'Invalid Count Query', message: "The 'limit' query must be a positive integer" },
  54: { status: 400, title: 'Invalid Paging Query', message: "The paging 'start' does not name an item of this list" },
  57: { status: 400, title: 'Invalid Sort Query', message: "The 'reverse' query must be empty, 'false', or the list's sort key" },
  60: { status: 400, title: 'Invalid Resource Id', message: 'Ids must be 128 lowercase hex characters. Invalid id: ' },
  62: { status: 400, title: 'Invalid State Address', message: 'State addresses must be an even number of lowercase hex characters, at most 70' },
  66: { status: 400, title: 'Id Query Invalid or Missing', message: "The 'id' query is required: a comma-separated list of batch ids" },
  70: { status: 404, title: 'Block Not Found', message: 'No block with that id exists' },
  71: { status: 404, title: 'Batch Not Found', message: 'No committed batch with that id exists' },
  72: { status: 404, title: 'Transaction Not Found', message: 'No committed transaction with that id exists' },
  75: { status: 404, title: 'State Not Found', message: 'No state leaf exists at that address' },
  80: { status: 404, title: 'Transaction Receipt Not Found', message: 'No receipt exists for one or more of the requested transaction ids' },
  81: { status: 400, title: 'Wrong Content Type', message: "Receipt requests in a POST body must have Content-Type 'application/json'" },
  82: { status: 400, title: 'Bad Receipts Request', message: 'A receipts request body must be a non-empty JSON array of transaction id strings' },
  83: { status: 400, title: 'Id Query Invalid or Missing', message: "The 'id' query is required: a comma-separated list of transaction ids" },
} as const satisfies Record<number, ErrorDef>;

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

const GENERIC_TITLES: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Request Entity Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** A ledger gateway error by code; `extra` is appended to (or replaces) the message. */
export function ledgerError(code: LedgerErrorCode, extra?: string, replace = false): ApiError {
  const def = LEDGER_ERRORS[code];
  const message = extra === undefined ? def.message : replace ? extra : `${def.message}${extra}`;
  return new ApiError(def.status, message, code);
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
