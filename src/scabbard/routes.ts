/**
 * Interface A's state service operations (research splinter.md §8; spec "Submit batches to
 * ledger service", "Check batch statuses", "List state entries", "Fetch state value"):
 * `/scabbard/{circuit}/{service_id}/batches | batch_statuses | state | state/{address} | state_root`.
 */
import type { Req } from '../http/server.js';
import { ANY_JSON } from '../http/route.js';
import { waitQuery } from '../http/wait.js';
import { isHexId } from '../codec/hex.js';
import { json, type Router } from '../node-api/router.js';
import type { ScabbardService } from './service.js';
import type { ScabbardServices } from './index.js';
import { scabbardErrors } from './errors.js';

const HEX_RE = /^[0-9a-f]*$/;
const MAX_WAIT_S = 300;

/** Batch status entry as upstream's JSON. */
export function statusJson(s: ScabbardService, id: string): unknown {
  const st = s.status(id);
  return {
    id,
    status: { statusType: st.type, message: st.message },
    timestamp: { secs_since_epoch: Math.floor(st.ts / 1000), nanos_since_epoch: (st.ts % 1000) * 1_000_000 },
  };
}

/** The query of `batch_statuses`: `ids` (checked once the service is known) and `wait` (at most 300 s, as upstream). */
interface StatusQuery {
  ids: string[];
  wait: number;
}

function statusQuery(req: Req): StatusQuery {
  return { ids: batchIds(req.query.get('ids')), wait: waitQuery(req, MAX_WAIT_S) };
}

/** The `prefix` query of `state`: up to 70 lowercase hex characters (none: all entries). */
function prefixQuery(req: Req): string {
  const prefix = req.query.get('prefix') ?? '';
  if (!HEX_RE.test(prefix) || prefix.length > 70) throw scabbardErrors.invalidPrefix();
  return prefix;
}

/**
 * The body of `batches`: the BatchList bytes as sent. They are decoded and their
 * signatures checked in the verify workers (asynchronously, by the handler), and only
 * when the service is not busy.
 */
function batchListBytes(req: Req): Buffer {
  return req.body;
}

/** The batch ids of a `batch_statuses` query, distinct, each 128 lowercase hex characters. */
function batchIds(raw: string | null): string[] {
  if (!raw) throw scabbardErrors.noBatchIds();
  const ids = [...new Set(raw.split(','))];
  const bad = ids.find((id) => !isHexId(id));
  if (bad !== undefined) throw scabbardErrors.invalidBatchId({ id: JSON.stringify(bad.slice(0, 140)) });
  return ids;
}

export function registerScabbardRoutes(r: Router, services: ScabbardServices): void {
  /**
   * Every route's load step: the service the path names, before anything else is read
   * (404 when this node runs no such service; 503 with Retry-After while it is starting).
   */
  const service = ({ params }: { params: { circuit: string; service: string } }): ScabbardService => services.lookup(params.circuit, params.service);

  r.add({
    method: 'post',
    path: '/scabbard/:circuit/:service/batches',
    permission: 'statesvc.write',
    reply: ANY_JSON,
    load: service,
    body: batchListBytes,
    handler: async ({ loaded: s, body }) => {
      // Refused before the signatures are checked: under back-pressure a retry costs no verification.
      if (s.busy) return { status: 429, body: '' };
      // Checked in the verify workers, not on this thread.
      const v = await s.checkList(body);
      if (!v.ok) {
        throw v.code === 'UNDECODABLE' ? scabbardErrors.undecodableBatches() : scabbardErrors.noValidBatches({ reason: v.message });
      }
      await s.accept(v.batches.map((b) => ({ id: b.id, bytes: body.subarray(b.start, b.end) })));
      const ids = v.batches.map((b) => b.id).join(',');
      return json({ link: `/scabbard/${s.circuitId}/${s.serviceId}/batch_statuses?ids=${ids}` }, 202);
    },
  });

  r.add({
    method: 'get',
    path: '/scabbard/:circuit/:service/batch_statuses',
    permission: 'statesvc.read',
    reply: ANY_JSON,
    load: service,
    query: statusQuery,
    handler: async ({ loaded: s, query: { ids, wait } }) => {
      await s.waitSettled(ids, wait * 1000);
      return json(ids.map((id) => statusJson(s, id)));
    },
  });

  r.add({
    method: 'get',
    path: '/scabbard/:circuit/:service/state',
    permission: 'statesvc.read',
    reply: ANY_JSON,
    load: service,
    query: prefixQuery,
    handler: ({ loaded: s, query: prefix }) => {
      return json(s.entries(prefix).map((e) => ({ address: e.address, value: [...e.value] })));
    },
  });

  r.add({
    method: 'get',
    path: '/scabbard/:circuit/:service/state/:address',
    permission: 'statesvc.read',
    reply: ANY_JSON,
    load: service,
    handler: ({ params, loaded: s }) => {
      if (!/^[0-9a-f]{70}$/.test(params.address)) throw scabbardErrors.invalidAddress();
      const v = s.get(params.address);
      if (!v) throw scabbardErrors.addressNotSet();
      return json([...v]);
    },
  });

  r.add({
    method: 'get',
    path: '/scabbard/:circuit/:service/state_root',
    permission: 'statesvc.read',
    reply: ANY_JSON,
    load: service,
    handler: ({ loaded: s }) => json(s.stateRoot()),
  });
}
