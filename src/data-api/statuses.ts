/**
 * GET /batch_statuses?id=<ids>[&wait][&service_id]: each id is a batch id (128 hex) or
 * an event id; an event id stands for every batch of its submission. Answers
 * `{"data": [{batch_id, event_id, status, invalid_transactions}], "link"}` (upstream's
 * envelope; not paged), after waiting as asked until none of the batches is PENDING.
 * An entry leaves out `batch_id` for an unknown event id and `event_id` for a batch
 * submitted elsewhere (through the ledger gateway).
 */
import type { Req } from '../http/server.js';
import { answer, type Answer } from '../http/route.js';
import type { DataBackend } from './backend.js';
import { EVENT_ID_RE } from './events.js';
import { baseUrl } from './paging.js';
import { statusJson, type StatusJson } from './submit.js';
import { waitQuery } from '../http/wait.js';
import { bad } from './validate.js';
import { isHexId } from '../codec/hex.js';

const MAX_IDS = 1000;

/** The query of GET /batch_statuses: the ids asked for (each a batch id or an event id), and the wait. */
export interface StatusesQuery {
  ids: string[];
  wait: number;
}

/** Reads and checks the ids (in order, the first bad one refused), then the wait. */
export function statusesQuery(req: Req): StatusesQuery {
  const raw = req.query.get('id');
  if (raw === null || raw.trim() === '') throw bad('`id` is required: comma-separated batch ids or event ids');
  const ids = raw.split(',').map((s) => s.trim());
  if (ids.length > MAX_IDS) throw bad(`\`id\` lists more than ${MAX_IDS} ids`);
  for (const id of ids) {
    if (!isHexId(id) && !EVENT_ID_RE.test(id)) {
      throw bad(`\`id\`: "${id.slice(0, 140)}" is neither a batch id (128 hex characters) nor an event id`);
    }
  }
  return { ids, wait: waitQuery(req) };
}

export async function batchStatuses(req: Req, be: DataBackend, { ids, wait }: StatusesQuery): Promise<Answer> {
  // [batch id | null, event id | null] per entry, in request order.
  const wanted: Array<[string | null, string | null]> = [];
  for (const id of ids) {
    if (isHexId(id)) wanted.push([id, be.events.eventOf(id) ?? null]);
    else {
      const batches = be.events.batchesOf(id);
      if (batches === undefined) wanted.push([null, id]);
      else for (const b of batches) wanted.push([b, id]);
    }
  }
  const batchIds = wanted.flatMap(([b]) => (b === null ? [] : [b]));
  if (wait > 0) await be.ledger.waitFor(batchIds, wait * 1000);
  const data = wanted.map(
    ([b, e]): StatusJson => (b === null ? { event_id: e as string, status: 'UNKNOWN', invalid_transactions: [] } : statusJson(be, b, e)),
  );
  const link = `${baseUrl(req)}${req.path}${req.rawQuery ? `?${req.rawQuery}` : ''}`;
  return answer({ data, link });
}
