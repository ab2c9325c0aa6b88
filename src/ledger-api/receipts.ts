/**
 * GET and POST /receipts: the receipts of committed transactions, in request order. If
 * any id has no receipt the whole request is 404 code 80, as upstream. With `wait`, the
 * answer waits (woken by commits) until every receipt exists or the time is up.
 */
import { receiptOf } from '../store/ledgerStores.js';
import type { HttpServer, Reply, Req } from '../http/server.js';
import type { Ledger } from '../ledger/ledger.js';
import { ledgerError, LedgerErrorCode } from './errors.js';
import { selfUrl } from './links.js';
import { receiptJson } from './json.js';
import { serialize } from './schemas.js';
import { checkIds, idArrayBody, idQuery, parseWait } from './params.js';
import type { CommitWaits } from './waits.js';

async function receipts(ledger: Ledger, waits: CommitWaits, req: Req, ids: string[], withLink: boolean): Promise<Reply> {
  checkIds(ids);
  const stores = ledger.stores;
  const wait = parseWait(req);
  if (wait > 0) await waits.until(() => ids.every((id) => stores.txnIndex.doesExist(id)), wait * 1000);
  const data = ids.map((id) => {
    const bytes = receiptOf(stores, id);
    if (bytes === undefined) throw ledgerError(LedgerErrorCode.ReceiptNotFound, `: ${id}`);
    return receiptJson(bytes);
  });
  return { status: 200, body: serialize.receipts(withLink ? { data, link: selfUrl(req) } : { data }) };
}

export function registerReceipts(server: HttpServer, ledger: Ledger, waits: CommitWaits): void {
  server.route('get', '/receipts', (req) => receipts(ledger, waits, req, idQuery(req, LedgerErrorCode.ReceiptIdQueryInvalid), true));
  server.route('post', '/receipts', (req) => receipts(ledger, waits, req, idArrayBody(req, LedgerErrorCode.WrongContentTypeReceipts, LedgerErrorCode.BadReceiptsRequest), false));
}
