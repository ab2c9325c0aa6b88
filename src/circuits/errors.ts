/**
 * The circuit admin routes' error catalog (src/http/errors.ts says how catalogs work),
 * answered on the node API in its `{"message"}` body. `upstream`: the Splinter admin
 * service whose message it keeps.
 */
import { catalog, type ErrorDef } from '../http/errors.js';

export const CIRCUIT_ERRORS = {
  proposalNotFound: { status: 404, title: 'Proposal Not Found', message: 'Unable to find proposal: {id}', upstream: 'Splinter admin' },
  circuitNotFound: { status: 404, title: 'Circuit Not Found', message: 'Unable to find circuit: {id}', upstream: 'Splinter admin' },
  payloadRefused: { status: 400, title: 'Payload Refused', message: '{reason}', upstream: 'Splinter admin' },
  emptyPayload: {
    status: 400,
    title: 'Empty Payload',
    message: 'Failed to parse payload: the body is empty (send the CircuitManagementPayload protobuf bytes)',
    upstream: 'Splinter admin',
  },
  notWebsocket: {
    status: 400,
    title: 'Websocket Endpoint',
    message: 'This is a websocket endpoint: send an Upgrade: websocket request',
    upstream: null,
  },
  invalidLast: {
    status: 400,
    title: 'Invalid Last Query',
    message: 'Invalid last value passed: {value}. Expected milliseconds since the epoch',
    upstream: null,
  },
  typeRequired: { status: 400, title: 'Type Required', message: 'A circuit management type is required', upstream: null },
} as const satisfies Record<string, ErrorDef>;

export const circuitErrors = catalog(CIRCUIT_ERRORS);
