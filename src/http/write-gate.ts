/**
 * The write gate of the three interfaces: while a storage alarm is raised (src/store/alarms.ts)
 * every write answers 503 with the alarm's cause (the server adds Retry-After) and every read
 * is served. It also turns a storage error a handler ran into (a failed node-store write, a
 * record that failed its checksum) into an alarm and a 503, never a 500.
 */
import type { Ledger } from '../ledger/ledger.js';
import type { ServerOptions } from './server.js';

/** POSTs that only read: they pass the gate. */
const READS: Record<string, readonly string[]> = {
  ledger: ['/batch_statuses'],
  data: ['/batch_statuses'],
  // The operator's way out: clearing an alarm must work while it is raised.
  node: ['/admin/alarms'],
};

/** POSTs on the ledger gateway that write (everything else there is a read). */
const LEDGER_WRITES = new Set(['/batches']);

export function readOnlyMessage(cause: string): string {
  return `The node is read-only until its storage alarm clears (it retries by itself; \`cairn alarm list\` shows it): ${cause}`;
}

export function writeGate(ledger: Ledger, iface: 'ledger' | 'node' | 'data'): Pick<ServerOptions, 'refuseWrite' | 'storageError'> {
  const reads = READS[iface] ?? [];
  return {
    refuseWrite: (_method, path) => {
      const fault = ledger.fault;
      if (fault === null) return null;
      if (iface === 'ledger' && !LEDGER_WRITES.has(path)) return null;
      if (reads.some((r) => path === r || path.startsWith(`${r}?`))) return null;
      return readOnlyMessage(fault);
    },
    storageError: (err) => {
      const cause = ledger.storageFault(err, 'ledger.mdb');
      return cause === null ? null : readOnlyMessage(cause);
    },
  };
}
