/**
 * The scabbard routes' error catalog (src/http/errors.ts says how catalogs work): a circuit's
 * state service, answered on the node API in its `{"message"}` body (and, for a busy service,
 * on the data API through src/scabbard/data-ledger.ts). `upstream`: the Splinter scabbard
 * service whose message it keeps.
 */
import { catalog, type ErrorDef } from '../http/errors.js';

export const SCABBARD_ERRORS = {
  serviceNotFound: { status: 404, title: 'Service Not Found', message: '{service} not found', upstream: null },
  serviceFailed: {
    status: 503,
    title: 'Service Not Running',
    message: "{service} is not running: its last start failed (see the node's log); it is tried again",
    upstream: null,
  },
  serviceStarting: { status: 503, title: 'Service Starting', message: '{service} is starting', upstream: null },
  busy: {
    status: 429,
    title: 'Service Busy',
    message: 'The circuit state service is busy (too many queued batches); retry later',
    upstream: null,
  },
  invalidPrefix: {
    status: 400,
    title: 'Invalid Prefix',
    message: 'Invalid query: prefix must be up to 70 lowercase hex characters',
    upstream: 'Splinter scabbard',
  },
  noBatchIds: { status: 400, title: 'No Batch Ids', message: 'No batch IDs specified', upstream: 'Splinter scabbard' },
  invalidBatchId: {
    status: 400,
    title: 'Invalid Batch Id',
    message: 'Invalid batch id: {id} (128 lowercase hex characters expected)',
    upstream: null,
  },
  undecodableBatches: {
    status: 400,
    title: 'Batches Not Decodable',
    message: 'Invalid body: not a valid list of batches',
    upstream: 'Splinter scabbard',
  },
  noValidBatches: { status: 400, title: 'No Valid Batches', message: 'No valid batches provided: {reason}', upstream: 'Splinter scabbard' },
  invalidAddress: {
    status: 400,
    title: 'Invalid Address',
    message: 'Invalid address: 70 lowercase hex characters expected',
    upstream: 'Splinter scabbard',
  },
  addressNotSet: { status: 404, title: 'Address Not Set', message: 'Address not set', upstream: 'Splinter scabbard' },
} as const satisfies Record<string, ErrorDef>;

export const scabbardErrors = catalog(SCABBARD_ERRORS);
