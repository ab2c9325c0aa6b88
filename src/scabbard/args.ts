/**
 * The arguments of a scabbard service as a circuit's roster gives them (upstream's keys:
 * `peer_services`, `admin_keys`, `coordinator_timeout`, `version`).
 */

export interface ServiceArgs {
  peers: string[];
  adminKeys: string[];
  coordinatorTimeoutMs: number;
  version: string;
}

/** A JSON array string or a comma list (upstream accepts both). */
function list(v: string | undefined): string[] {
  if (v === undefined || v.trim() === '') return [];
  const s = v.trim();
  if (s.startsWith('[')) {
    try {
      const a = JSON.parse(s) as unknown;
      if (Array.isArray(a)) return a.map(String);
    } catch {
      /* fall through to the comma list */
    }
  }
  return s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}

export function parseServiceArgs(args: ReadonlyArray<{ key: string; value: string }>): ServiceArgs {
  const get = (k: string): string | undefined => args.find((a) => a.key === k)?.value;
  const timeout = Number(get('coordinator_timeout') ?? '30000');
  return {
    peers: list(get('peer_services')),
    adminKeys: list(get('admin_keys')),
    coordinatorTimeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : 30_000,
    version: get('version') ?? '1',
  };
}
