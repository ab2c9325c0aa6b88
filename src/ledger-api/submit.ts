/** POST /batches and GET/POST /batch_statuses. */
import type { HttpServer, Reply, Req } from '../http/server.js';
import type { Ledger } from '../ledger/ledger.js';
import { ledgerError, LedgerErrorCode } from './errors.js';
import { buildUrl, selfUrl } from './links.js';
import { serialize } from './schemas.js';
import { checkIds, idArrayBody, idQuery, parseWait } from './params.js';

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

async function submitBatches(ledger: Ledger, req: Req): Promise<Reply> {
  if (req.headers['content-type'] !== 'application/octet-stream') throw ledgerError(LedgerErrorCode.WrongContentTypeBatches);
  if (req.body.length === 0) throw ledgerError(LedgerErrorCode.NoBatchesSubmitted);
  const r = await ledger.submit(req.body);
  if (!r.ok) {
    const code = SUBMIT_ERRORS[r.code];
    throw code === LedgerErrorCode.UnableToAcceptBatches ? ledgerError(code) : ledgerError(code, r.message, true);
  }
  return { status: 202, body: serialize.link({ link: buildUrl(req, '/batch_statuses', { id: r.ids.join(',') }) }) };
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
    };
  });
}

async function statuses(ledger: Ledger, req: Req, ids: string[], withLink: boolean): Promise<Reply> {
  checkIds(ids);
  const wait = parseWait(req);
  if (wait > 0) await ledger.waitFor(ids, wait * 1000);
  const data = statusEntries(ledger, ids);
  return { status: 200, body: serialize.statuses(withLink ? { data, link: selfUrl(req) } : { data }) };
}

export function registerSubmit(server: HttpServer, ledger: Ledger): void {
  server.route('post', '/batches', (req) => submitBatches(ledger, req));
  server.route('get', '/batch_statuses', (req) => statuses(ledger, req, idQuery(req, LedgerErrorCode.StatusIdQueryInvalid), true));
  server.route('post', '/batch_statuses', (req) => statuses(ledger, req, idArrayBody(req, LedgerErrorCode.WrongContentTypeStatuses, LedgerErrorCode.BadStatusRequest), false));
}
