/**
 * The data API's error catalog (src/http/errors.ts says how catalogs work): every error the
 * data API's routes answer, in its `{"message"}` body (src/http/message-error.ts). The
 * errors of the permission check are in src/auth/errors.ts. `upstream`: the Grid REST API's
 * error kind the answer keeps (its status), or null where the answer is this node's own.
 */
import { catalog, type ErrorDef } from '../http/errors.js';

export const DATA_ERRORS = {
  invalidBody: { status: 400, title: 'Invalid Request', message: '{reason}', upstream: 'Grid BadRequest' },
  invalidPaging: {
    status: 400,
    title: 'Invalid Paging Query',
    message: '`{name}` must be an integer from {min} to {max}, got "{value}"',
    upstream: 'Grid BadRequest',
  },
  serviceIdNotQualified: {
    status: 400,
    title: 'Service Id Not Qualified',
    message: 'Must provide a fully-qualified service_id: <circuit_id>::<service_id>',
    upstream: 'Grid BadRequest',
  },
  serviceNotFound: { status: 404, title: 'Service Not Found', message: 'Service {id} not found', upstream: 'Grid NotFound' },
  signerNotKey: {
    status: 400,
    title: 'Invalid Signer',
    message: '`signer` must be a compressed secp256k1 public key (66 lower-case hex characters)',
    upstream: null,
  },
  signerUnknown: { status: 400, title: 'Unknown Signer', message: '`signer`: this node holds no key for {key}', upstream: null },
  batchListContentType: {
    status: 415,
    title: 'Wrong Content Type',
    message: 'POST /batches takes a protobuf BatchList (Content-Type: application/octet-stream)',
    upstream: null,
  },
  batchListEmpty: { status: 400, title: 'No Batches Submitted', message: 'The BatchList is empty: submit at least one batch', upstream: null },
  batchListRejected: {
    status: 400,
    title: 'Submitted Batches Invalid',
    message: 'The submitted BatchList was rejected: it is poorly formed or has an invalid signature ({reason})',
    upstream: null,
  },
  ledgerBusy: {
    status: 429,
    title: 'Unable to Accept Batches',
    message: 'The ledger is busy (too many pending batches); retry later',
    upstream: null,
  },
  ledgerUnavailable: { status: 503, title: 'Ledger Unavailable', message: '{reason}', upstream: null },
  readOnly: {
    status: 503,
    title: 'Read Only',
    message: 'The node is read-only until its storage alarm clears: {fault}',
    upstream: null,
  },
  organizationNotFound: { status: 404, title: 'Organization Not Found', message: 'Organization {id} not found', upstream: 'Grid NotFound' },
  agentNotFound: { status: 404, title: 'Agent Not Found', message: 'Agent {key} not found', upstream: 'Grid NotFound' },
  orgAgentNotFound: {
    status: 404,
    title: 'Agent Not Found',
    message: 'Agent {key} of organization {org} not found',
    upstream: 'Grid NotFound',
  },
  roleNotFound: { status: 404, title: 'Role Not Found', message: 'Role {name} for {org} not found', upstream: 'Grid NotFound' },
  schemaNotFound: { status: 404, title: 'Schema Not Found', message: 'Schema {name} not found', upstream: 'Grid NotFound' },
  productNotFound: { status: 404, title: 'Product Not Found', message: 'Product {id} not found', upstream: 'Grid NotFound' },
  locationNotFound: { status: 404, title: 'Location Not Found', message: 'Location {id} not found', upstream: 'Grid NotFound' },
  purchaseOrderNotFound: {
    status: 404,
    title: 'Purchase Order Not Found',
    message: 'Purchase order {uid} not found',
    upstream: 'Grid NotFound',
  },
  poVersionNotFound: {
    status: 404,
    title: 'Purchase Order Version Not Found',
    message: 'Purchase order {uid} version {version} not found',
    upstream: 'Grid NotFound',
  },
  poRevisionNotFound: {
    status: 404,
    title: 'Purchase Order Revision Not Found',
    message: 'Purchase order {uid} version {version} revision {revision} not found',
    upstream: 'Grid NotFound',
  },
} as const satisfies Record<string, ErrorDef>;

export const dataErrors = catalog(DATA_ERRORS);
