/**
 * A circuit's state service as the data API's ledger (query `service_id=<circuit>::<service>`):
 * client BatchLists are verified as the /scabbard route does (Sabre only, in the verify
 * workers), batches the node
 * builds go into the service's durable intake, and statuses and waits come from its
 * stored statuses. The coordinator's back-pressure answers 429, as on the /scabbard route.
 */
import type { DataLedger } from '../data-api/backend.js';
import type { SubmitResult } from '../ledger/ingest.js';
import type { StatusEntry } from '../ledger/query.js';
import type { ScabbardService } from './service.js';
import { SCABBARD_ERRORS, scabbardErrors } from './errors.js';

const BUSY = SCABBARD_ERRORS.busy.message;

export class ScabbardDataLedger implements DataLedger {
  readonly fault: string | null = null;

  constructor(private readonly s: ScabbardService) {}

  async submit(body: Uint8Array): Promise<SubmitResult> {
    if (this.s.busy) return { ok: false, code: 'QUEUE_FULL', message: BUSY };
    const v = await this.s.checkList(body);
    if (!v.ok) return v;
    await this.s.accept(v.batches.map((b) => ({ id: b.id, bytes: body.subarray(b.start, b.end) })));
    return { ok: true, ids: v.batches.map((b) => b.id) };
  }

  async submitTrusted(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    if (this.s.busy) throw scabbardErrors.busy();
    await this.s.accept(batches);
  }

  status(id: string): StatusEntry {
    return this.s.ledgerStatus(id);
  }

  waitFor(ids: string[], timeoutMs: number): Promise<void> {
    return this.s.waitNotPending(ids, timeoutMs);
  }
}
