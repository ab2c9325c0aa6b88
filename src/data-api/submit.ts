/**
 * The write path of the JSON API: build the family transactions of one request, sign
 * them into ONE batch (so a multi-record create is all-or-nothing), record its event id,
 * hand the batch to the ledger, and answer with the link `{batch_id, event_id}`.
 *
 * `wait` absent: 202 at once. `wait=N`: hold the answer until the batch leaves PENDING
 * or N seconds pass, then say which: `status` (and `invalid_transactions`) next to
 * `link`, 200 once the batch is COMMITTED or INVALID, 202 while it is still PENDING.
 */
import type { Req } from '../http/server.js';
import { answer, type Answer } from '../http/route.js';
import type { Signer } from '../crypto/secp256k1.js';
import { buildBatch, buildTransaction } from '../ledger/build.js';
import { LedgerUnavailable, type BatchStatus } from '../ledger/ledger.js';
import { buildGridTransaction, GridBuildError, wrapInSabre, type GridActionInput } from '../families/grid/index.js';
import type { DataBackend } from './backend.js';
import { bad } from './validate.js';
import { waitQuery } from '../http/wait.js';
import { dataErrors } from './errors.js';

export interface InvalidTxnJson {
  id: string;
  message: string;
  extended_data?: string;
}

/** A field without a value is left out, never `null` (the spec types both as strings). */
export interface StatusJson {
  batch_id?: string;
  event_id?: string;
  status: BatchStatus;
  invalid_transactions: InvalidTxnJson[];
}

export function statusJson(be: DataBackend, batchId: string, eventId: string | null): StatusJson {
  const s = be.ledger.status(batchId);
  return {
    batch_id: batchId,
    ...(eventId === null ? {} : { event_id: eventId }),
    status: s.status,
    invalid_transactions: s.invalid_transactions.map((t) =>
      t.extended_data ? { id: t.id, message: t.message, extended_data: t.extended_data } : { id: t.id, message: t.message },
    ),
  };
}

/** One status for several batches: PENDING or UNKNOWN if any is, else INVALID if any is. */
function overall(entries: StatusJson[]): BatchStatus {
  for (const s of ['PENDING', 'UNKNOWN', 'INVALID'] as const) if (entries.some((e) => e.status === s)) return s;
  return 'COMMITTED';
}

/**
 * The query of the data API's writes: `wait` (seconds, as every mutation takes it) and
 * `signer` (the agent key to sign with, null for the node's). Neither is refused here: a
 * bad wait reads as the long one, and the signer is checked by `Signers.pick` when the
 * handler gets to it, after the path and body checks, as it always was.
 */
export interface WriteQuery {
  wait: number;
  signer: string | null;
}

/** The query parser of every data API write route. */
export function writeQuery(req: Req): WriteQuery {
  return { wait: waitQuery(req), signer: req.query.get('signer') };
}

/**
 * The answer to a submission: `{"link": {"batch_id", "event_id"}}`, after `wait` seconds
 * (the request's, from its query parser). Several batches (a client BatchList) are listed
 * comma-joined in `batch_id`, the form `/batch_statuses?id=` takes.
 */
export async function linkReply(be: DataBackend, batchIds: string[], eventId: string, wait: number): Promise<Answer> {
  const link = { batch_id: batchIds.join(','), event_id: eventId };
  if (wait === 0) return answer({ link }, 202);
  await be.ledger.waitFor(batchIds, wait * 1000);
  const entries = batchIds.map((id) => statusJson(be, id, eventId));
  const status = overall(entries);
  const body = { link, status, invalid_transactions: entries.flatMap((e) => e.invalid_transactions) };
  return answer(body, status === 'PENDING' ? 202 : 200);
}

export interface Planned {
  action: GridActionInput;
  /** Where the action came from in the body (prefix of build error messages). */
  path: string;
}

/** Builds, signs (one batch), records and submits the request's actions (Sabre-wrapped for a circuit's service). */
export async function submitActions(be: DataBackend, signer: Signer, planned: Planned[], wait: number): Promise<Answer> {
  // A node that stopped on a fault acknowledges nothing more, its own writes included.
  if (be.ledger.fault !== null) throw dataErrors.readOnly({ fault: be.ledger.fault });
  const timestamp = Math.floor(Date.now() / 1000);
  const txns = planned.map(({ action, path }) => {
    try {
      const tx = buildGridTransaction(action, { timestamp, signer: signer.publicKey });
      // A circuit's state service executes Sabre only: the contract is named in an ExecuteContractAction.
      return buildTransaction(signer, be.sabre ? wrapInSabre(tx) : tx);
    } catch (err) {
      if (err instanceof GridBuildError) throw bad(path === '' ? err.message : `\`${path}\`: ${err.message}`);
      throw err;
    }
  });
  const batch = buildBatch(signer, txns);
  let eventId: string;
  try {
    [eventId] = await Promise.all([be.events.record([batch.id]), be.ledger.submitTrusted([{ id: batch.id, bytes: batch.bytes }])]);
  } catch (err) {
    if (err instanceof LedgerUnavailable) throw dataErrors.ledgerUnavailable({ reason: err.message });
    throw err;
  }
  return linkReply(be, [batch.id], eventId, wait);
}
