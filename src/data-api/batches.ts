/**
 * POST /batches on the data API: a client-signed protobuf BatchList (what upstream Grid
 * clients send: plain family or Sabre-wrapped transactions), handed to the ledger exactly
 * as the ledger gateway does (signature checks, back-pressure). Answers the data API's link shape,
 * `{"link": {"batch_id": "<id>[,<id>...]", "event_id"}}` (202; `wait` as for every
 * mutation), with one event id for the whole BatchList.
 */
import { ApiError, type Req } from '../http/server.js';
import type { Answer } from '../http/route.js';
import type { DataBackend } from './backend.js';
import { linkReply } from './submit.js';

const SUBMIT_STATUS = { EMPTY: 400, UNDECODABLE: 400, INVALID: 400, QUEUE_FULL: 429, UNAVAILABLE: 503 } as const;

/** The body of POST /batches: the BatchList bytes, refused when sent as something else or empty. */
export function batchListBody(req: Req): Buffer {
  const [mediaType = ''] = (req.headers['content-type'] ?? '').split(';');
  const ct = mediaType.trim().toLowerCase();
  // Upstream's CLI sends no content type; JSON or form bodies are clearly something else.
  if (ct !== '' && ct !== 'application/octet-stream') {
    throw new ApiError(415, 'POST /batches takes a protobuf BatchList (Content-Type: application/octet-stream)');
  }
  if (req.body.length === 0) throw new ApiError(400, 'The BatchList is empty: submit at least one batch');
  return req.body;
}

/** Submits a BatchList (checked by `batchListBody`) to the request's ledger. */
export async function postBatches(be: DataBackend, body: Buffer, wait: number): Promise<Answer> {
  const r = await be.ledger.submit(body);
  if (!r.ok) {
    const message =
      r.code === 'QUEUE_FULL'
        ? 'The ledger is busy (too many pending batches); retry later'
        : r.code === 'UNAVAILABLE'
          ? r.message
          : r.code === 'EMPTY'
            ? 'The BatchList is empty: submit at least one batch'
            : `The submitted BatchList was rejected: it is poorly formed or has an invalid signature (${r.message})`;
    throw new ApiError(SUBMIT_STATUS[r.code], message);
  }
  const eventId = await be.events.record(r.ids);
  return linkReply(be, r.ids, eventId, wait);
}
