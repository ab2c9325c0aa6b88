/**
 * The node's storage alarms on the node API (src/store/alarms.ts):
 *   GET    /admin/alarms   the raised alarms: [{kind, cause, since}]       (status.read)
 *   DELETE /admin/alarms   clears them and retries the storage at once     (alarm.write)
 * A cleared alarm whose fault is still there is raised again by the next failed write or
 * probe; `?kind=NOSPACE` (repeatable) clears only those kinds.
 */
import type { Ledger } from '../ledger/ledger.js';
import type { AlarmKind } from '../store/alarms.js';
import type { Req } from '../http/server.js';
import { json, type Router } from './router.js';
import { nodeReplies } from './replies.js';
import { nodeErrors } from './errors.js';

const KINDS: readonly AlarmKind[] = ['NOSPACE', 'IO', 'STALLED', 'CORRUPT', 'COMMITTER', 'DIVERGED'];

function isKind(k: string): k is AlarmKind {
  return (KINDS as readonly string[]).includes(k);
}

/** The `kind` query of DELETE /admin/alarms (repeatable): each one a known alarm kind; none means all. */
function alarmKinds(req: Req): AlarmKind[] {
  const kinds = req.query.getAll('kind');
  const bad = kinds.find((k) => !isKind(k));
  if (bad !== undefined) throw nodeErrors.unknownAlarmKind({ kind: JSON.stringify(bad.slice(0, 40)), kinds: KINDS.join(', ') });
  return kinds.filter(isKind);
}

export function registerAlarmRoutes(r: Router, ledger: Ledger): void {
  r.add({
    method: 'get',
    path: '/admin/alarms',
    permission: 'status.read',
    reply: nodeReplies.alarms,
    handler: () => json({ data: ledger.alarms.list() }),
  });
  r.add({
    method: 'del',
    path: '/admin/alarms',
    permission: 'alarm.write',
    reply: nodeReplies.alarms,
    query: alarmKinds,
    handler: ({ query: kinds }) => {
      const cleared = ledger.alarms.list().filter((a) => kinds.length === 0 || kinds.includes(a.kind));
      ledger.clearAlarms(kinds.length ? kinds : undefined);
      return json({ data: cleared });
    },
  });
}
