/** POST /batches and GET/POST /batch_statuses. */
import type { Req } from '../http/server.js';
import { answer, type Answer } from '../http/route.js';
import { ledgerRoute, type LedgerRoute } from './route.js';
import type { Ledger } from '../ledger/ledger.js';
import { ledgerError, LedgerErrorCode } from './errors.js';
import { buildUrl, selfUrl } from './links.js';
import { replies } from './schemas.js';
import { checkIds, idArrayBody, idsAndWait } from './params.js';
import { paced, waitQuery } from '../http/wait.js';

/**
 * UNAVAILABLE (the batches could not be stored, or the node stopped on a fault) answers
 * upstream's 18, 503 "Validator Disconnected": what the gateway says when the validator
 * behind it went away mid-request, which clients already treat as "retry later"; the
 * message says why.
 */
const SUBMIT_ERRORS = {
  EMPTY: LedgerErrorCode.NoBatchesSubmitted,
  UNDECODABLE: LedgerErrorCode.ProtobufNotDecodable,
  INVALID: LedgerErrorCode.SubmittedBatchesInvalid,
  QUEUE_FULL: LedgerErrorCode.UnableToAcceptBatches,
  UNAVAILABLE: LedgerErrorCode.ValidatorDisconnected,
} as const;

/** The body of POST /batches: BatchList bytes, sent as application/octet-stream, not empty. */
function batchListBody(req: Req): Buffer {
  if (req.headers['content-type'] !== 'application/octet-stream') throw ledgerError(LedgerErrorCode.WrongContentTypeBatches);
  if (req.body.length === 0) throw ledgerError(LedgerErrorCode.NoBatchesSubmitted);
  return req.body;
}

async function submitBatches(ledger: Ledger, req: Req, body: Buffer): Promise<Answer> {
  const r = await ledger.submit(body);
  if (!r.ok) {
    const code = SUBMIT_ERRORS[r.code];
    throw code === LedgerErrorCode.UnableToAcceptBatches ? ledgerError(code) : ledgerError(code, r.message, true);
  }
  return answer({ link: buildUrl(req, '/batch_statuses', { id: r.ids.join(',') }) }, 202);
}

function statusEntries(ledger: Ledger, ids: string[]): object[] {
  return ids.map((id) => {
    const s = ledger.status(id);
    return {
      id: s.id,
      invalid_transactions: s.invalid_transactions.map((t) => {
        const o: Record<string, string> = { id: t.id };
        if (t.message) o.message = t.message;
        if (t.extended_data) o.extended_data = t.extended_data;
        return o;
      }),
      status: s.status,
      ...(s.status === 'PENDING' ? { reason: ledger.setAsideReason(id) } : {}),
    };
  });
}

async function statuses(ledger: Ledger, req: Req, ids: string[], wait: number, withLink: boolean): Promise<Answer> {
  // Paced: a block that settles what a thousand long-polls wait for answers them a slice per turn.
  if (wait > 0) await paced(ledger.waitFor(ids, wait * 1000));
  const data = statusEntries(ledger, ids);
  return answer(withLink ? { data, link: selfUrl(req) } : { data });
}

export function submitRoutes(ledger: Ledger): LedgerRoute[] {
  return [
    ledgerRoute({
      method: 'post',
      path: '/batches',
      body: batchListBody,
      reply: replies.link,
      handler: ({ req, body }) => submitBatches(ledger, req, body),
    }),
    ledgerRoute({
      method: 'get',
      path: '/batch_statuses',
      query: (req) => idsAndWait(req, LedgerErrorCode.StatusIdQueryInvalid),
      reply: replies.statuses,
      handler: ({ req, query }) => statuses(ledger, req, query.ids, query.wait, true),
    }),
    ledgerRoute({
      method: 'post',
      path: '/batch_statuses',
      // The wait is read first but never refused, so the body's errors come first as before.
      query: (req) => waitQuery(req),
      body: (req) => checkIds(idArrayBody(req, LedgerErrorCode.WrongContentTypeStatuses, LedgerErrorCode.BadStatusRequest)),
      reply: replies.statuses,
      handler: ({ req, query: wait, body: ids }) => statuses(ledger, req, ids, wait, false),
    }),
  ];
}
