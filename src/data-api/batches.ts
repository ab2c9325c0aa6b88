/**
 * POST /batches on the data API: a client-signed protobuf BatchList (what upstream Grid
 * clients send: plain family or Sabre-wrapped transactions), handed to the ledger exactly
 * as the ledger gateway does (signature checks, back-pressure). Answers the data API's link shape,
 * `{"link": {"batch_id": "<id>[,<id>...]", "event_id"}}` (202; `wait` as for every
 * mutation), with one event id for the whole BatchList.
 */
import type { Req } from '../http/server.js';
import type { Answer } from '../http/route.js';
import type { DataBackend } from './backend.js';
import { linkReply } from './submit.js';
import { dataErrors } from './errors.js';

/** The body of POST /batches: the BatchList bytes, refused when sent as something else or empty. */
export function batchListBody(req: Req): Buffer {
  const [mediaType = ''] = (req.headers['content-type'] ?? '').split(';');
  const ct = mediaType.trim().toLowerCase();
  // Upstream's CLI sends no content type; JSON or form bodies are clearly something else.
  if (ct !== '' && ct !== 'application/octet-stream') {
    throw dataErrors.batchListContentType();
  }
  if (req.body.length === 0) throw dataErrors.batchListEmpty();
  return req.body;
}

/** Submits a BatchList (checked by `batchListBody`) to the request's ledger. */
export async function postBatches(be: DataBackend, body: Buffer, wait: number): Promise<Answer> {
  const r = await be.ledger.submit(body);
  if (!r.ok) {
    throw r.code === 'QUEUE_FULL'
      ? dataErrors.ledgerBusy()
      : r.code === 'UNAVAILABLE'
        ? dataErrors.ledgerUnavailable({ reason: r.message })
        : r.code === 'EMPTY'
          ? dataErrors.batchListEmpty()
          : dataErrors.batchListRejected({ reason: r.message });
  }
  const eventId = await be.events.record(r.ids);
  return linkReply(be, r.ids, eventId, wait);
}
