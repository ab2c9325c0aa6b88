/**
 * GET and POST /receipts: the receipts of committed transactions, in request order. If
 * any id has no receipt the whole request is 404 code 80, as upstream. With `wait`, the
 * answer waits (woken by commits) until every receipt exists or the time is up.
 */
import type { Req } from '../http/server.js';
import { answer, type Answer } from '../http/route.js';
import { ledgerRoute, type LedgerRoute } from './route.js';
import type { Ledger } from '../ledger/ledger.js';
import { ledgerError, LedgerErrorCode } from './errors.js';
import { selfUrl } from './links.js';
import { receiptJson } from './json.js';
import { replies } from './schemas.js';
import { checkIds, idArrayBody, idsAndWait } from './params.js';
import { waitQuery } from '../http/wait.js';
import type { CommitWaits } from './waits.js';

async function receipts(ledger: Ledger, waits: CommitWaits, req: Req, ids: string[], wait: number, withLink: boolean): Promise<Answer> {
  const query = ledger.query;
  if (wait > 0) await waits.until(() => ids.every((id) => query.isTxnCommitted(id)), wait * 1000);
  const data = ids.map((id) => {
    const bytes = query.receipt(id);
    if (bytes === undefined) throw ledgerError(LedgerErrorCode.ReceiptNotFound, `: ${id}`);
    return receiptJson(bytes);
  });
  return answer(withLink ? { data, link: selfUrl(req) } : { data });
}

export function receiptRoutes(ledger: Ledger, waits: CommitWaits): LedgerRoute[] {
  return [
    ledgerRoute({
      method: 'get',
      path: '/receipts',
      query: (req) => idsAndWait(req, LedgerErrorCode.ReceiptIdQueryInvalid),
      reply: replies.receipts,
      handler: ({ req, query }) => receipts(ledger, waits, req, query.ids, query.wait, true),
    }),
    ledgerRoute({
      method: 'post',
      path: '/receipts',
      // The wait is read first but never refused, so the body's errors come first as before.
      query: (req) => waitQuery(req),
      body: (req) => checkIds(idArrayBody(req, LedgerErrorCode.WrongContentTypeReceipts, LedgerErrorCode.BadReceiptsRequest)),
      reply: replies.receipts,
      handler: ({ req, query: wait, body: ids }) => receipts(ledger, waits, req, ids, wait, false),
    }),
  ];
}
