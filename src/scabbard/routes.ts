/**
 * Interface A's state service operations (research splinter.md §8; spec "Submit batches to
 * ledger service", "Check batch statuses", "List state entries", "Fetch state value"):
 * `/scabbard/{circuit}/{service_id}/batches | batch_statuses | state | state/{address} | state_root`.
 */
import type { Req } from '../http/server.js';
import { ApiError } from '../http/api-error.js';
import { ANY_JSON } from '../http/route.js';
import { waitQuery } from '../http/wait.js';
import { isHexId } from '../codec/hex.js';
import { json, type Router } from '../node-api/router.js';
import type { ScabbardService } from './service.js';
import type { ScabbardServices } from './index.js';

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

/** The query of `batch_statuses`: `ids` (checked once the service is known, as before) and `wait` (at most 300 s, as upstream). */
interface StatusQuery {
  ids: string | null;
  wait: number;
}

function statusQuery(req: Req): StatusQuery {
  return { ids: req.query.get('ids'), wait: waitQuery(req, MAX_WAIT_S) };
}

/** The batch ids of a `batch_statuses` query, distinct, each 128 lowercase hex characters. */
function batchIds(raw: string | null): string[] {
  if (!raw) throw new ApiError(400, 'No batch IDs specified');
  const ids = [...new Set(raw.split(','))];
  const bad = ids.find((id) => !isHexId(id));
  if (bad !== undefined) throw new ApiError(400, `Invalid batch id: ${JSON.stringify(bad.slice(0, 140))} (128 lowercase hex characters expected)`);
  return ids;
}

export function registerScabbardRoutes(r: Router, services: ScabbardServices): void {
  const service = (params: { circuit: string; service: string }): ScabbardService => {
    const { circuit, service: id } = params;
    const s = services.get(circuit, id);
    if (!s) throw new ApiError(404, `scabbard service ${id.slice(0, 64)} on circuit ${circuit.slice(0, 64)} not found`);
    return s;
  };

  r.add({
    method: 'post',
    path: '/scabbard/:circuit/:service/batches',
    permission: 'statesvc.write',
    reply: ANY_JSON,
    handler: async ({ req, params }) => {
      const s = service(params);
      // Refused before the signatures are checked: under back-pressure a retry costs no verification.
      if (s.busy) return { status: 429, body: '' };
      // Checked in the verify workers, not on this thread.
      const v = await s.checkList(req.body);
      if (!v.ok) {
        const m = v.code === 'UNDECODABLE' ? 'Invalid body: not a valid list of batches' : `No valid batches provided: ${v.message}`;
        throw new ApiError(400, m);
      }
      await s.accept(v.batches.map((b) => ({ id: b.id, bytes: req.body.subarray(b.start, b.end) })));
      const ids = v.batches.map((b) => b.id).join(',');
      return json({ link: `/scabbard/${s.circuitId}/${s.serviceId}/batch_statuses?ids=${ids}` }, 202);
    },
  });

  r.add({
    method: 'get',
    path: '/scabbard/:circuit/:service/batch_statuses',
    permission: 'statesvc.read',
    reply: ANY_JSON,
    query: statusQuery,
    handler: async ({ params, query }) => {
      const s = service(params);
      const ids = batchIds(query.ids);
      await s.waitSettled(ids, query.wait * 1000);
      return json(ids.map((id) => statusJson(s, id)));
    },
  });

  r.add({
    method: 'get',
    path: '/scabbard/:circuit/:service/state',
    permission: 'statesvc.read',
    reply: ANY_JSON,
    query: (req) => req.query.get('prefix') ?? '',
    handler: ({ params, query: prefix }) => {
      const s = service(params);
      if (!HEX_RE.test(prefix) || prefix.length > 70) throw new ApiError(400, 'Invalid query: prefix must be up to 70 lowercase hex characters');
      return json(s.entries(prefix).map((e) => ({ address: e.address, value: [...e.value] })));
    },
  });

  r.add({
    method: 'get',
    path: '/scabbard/:circuit/:service/state/:address',
    permission: 'statesvc.read',
    reply: ANY_JSON,
    handler: ({ params }) => {
      const s = service(params);
      if (!/^[0-9a-f]{70}$/.test(params.address)) throw new ApiError(400, 'Invalid address: 70 lowercase hex characters expected');
      const v = s.get(params.address);
      if (!v) throw new ApiError(404, 'Address not set');
      return json([...v]);
    },
  });

  r.add({
    method: 'get',
    path: '/scabbard/:circuit/:service/state_root',
    permission: 'statesvc.read',
    reply: ANY_JSON,
    handler: ({ params }) => json(service(params).stateRoot()),
  });
}
