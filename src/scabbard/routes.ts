/**
 * Interface A's state service operations (research splinter.md §8; spec "Submit batches to
 * ledger service", "Check batch statuses", "List state entries", "Fetch state value"):
 * `/scabbard/{circuit}/{service_id}/batches | batch_statuses | state | state/{address} | state_root`.
 */
import { HttpError } from '../http/server.js';
import { json, type Router } from '../node-api/router.js';
import type { ScabbardService } from './service.js';
import type { ScabbardServices } from './index.js';

const HEX_RE = /^[0-9a-f]*$/;
const ID_RE = /^[0-9a-f]{128}$/;
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

/** `wait` as upstream reads it: absent or `false` → 0; an integer → it; anything else → 300 s. */
export function waitSeconds(v: string | null): number {
  if (v === null || v === 'false') return 0;
  if (/^\d+$/.test(v)) return Math.min(Number(v), MAX_WAIT_S);
  return MAX_WAIT_S;
}

export function registerScabbardRoutes(r: Router, services: ScabbardServices): void {
  const service = (params: string[]): ScabbardService => {
    const [circuit = '', id = ''] = params;
    const s = services.get(circuit, id);
    if (!s) throw new HttpError(404, `scabbard service ${id.slice(0, 64)} on circuit ${circuit.slice(0, 64)} not found`);
    return s;
  };

  r.secured('post', '/scabbard/:circuit/:service/batches', 'statesvc.write', async ({ req }) => {
    const s = service(req.params);
    // Refused before the signatures are checked: under back-pressure a retry costs no verification.
    if (s.busy) return { status: 429, body: '' };
    // Checked in the verify workers, not on this thread.
    const v = await s.checkList(req.body);
    if (!v.ok) {
      const m = v.code === 'UNDECODABLE' ? 'Invalid body: not a valid list of batches' : `No valid batches provided: ${v.message}`;
      throw new HttpError(400, m);
    }
    await s.accept(v.batches.map((b) => ({ id: b.id, bytes: req.body.subarray(b.start, b.end) })));
    const ids = v.batches.map((b) => b.id).join(',');
    return json({ link: `/scabbard/${s.circuitId}/${s.serviceId}/batch_statuses?ids=${ids}` }, 202);
  });

  r.secured('get', '/scabbard/:circuit/:service/batch_statuses', 'statesvc.read', async ({ req }) => {
    const s = service(req.params);
    const raw = req.query.get('ids');
    if (!raw) throw new HttpError(400, 'No batch IDs specified');
    const ids = [...new Set(raw.split(','))];
    const bad = ids.find((id) => !ID_RE.test(id));
    if (bad !== undefined) throw new HttpError(400, `Invalid batch id: ${JSON.stringify(bad.slice(0, 140))} (128 lowercase hex characters expected)`);
    await s.waitSettled(ids, waitSeconds(req.query.get('wait')) * 1000);
    return json(ids.map((id) => statusJson(s, id)));
  });

  r.secured('get', '/scabbard/:circuit/:service/state', 'statesvc.read', ({ req }) => {
    const s = service(req.params);
    const prefix = req.query.get('prefix') ?? '';
    if (!HEX_RE.test(prefix) || prefix.length > 70) throw new HttpError(400, 'Invalid query: prefix must be up to 70 lowercase hex characters');
    return json(s.entries(prefix).map((e) => ({ address: e.address, value: [...e.value] })));
  });

  r.secured('get', '/scabbard/:circuit/:service/state/:address', 'statesvc.read', ({ req }) => {
    const s = service(req.params);
    const address = req.params[2] ?? '';
    if (!/^[0-9a-f]{70}$/.test(address)) throw new HttpError(400, 'Invalid address: 70 lowercase hex characters expected');
    const v = s.get(address);
    if (!v) throw new HttpError(404, 'Address not set');
    return json([...v]);
  });

  r.secured('get', '/scabbard/:circuit/:service/state_root', 'statesvc.read', ({ req }) => json(service(req.params).stateRoot()));
}
