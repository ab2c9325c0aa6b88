/**
 * GET /cluster/blocks?from=N&limit=M on a cluster member's ledger gateway: blocks N… of its
 * chain as stored (protobuf Block bytes, each after its length as a 4-byte big-endian
 * integer), for a member that catches up after the log it missed was deleted
 * (src/cluster/catch-up.ts). Blocks are public on /blocks already; the member that reads
 * them checks each one's signature (the chain key) and state root before it writes it.
 */
import type { Req } from '../http/server.js';
import type { Ledger } from '../ledger/ledger.js';
import { ANY_JSON } from '../http/route.js';
import { ledgerRoute, type LedgerRoute } from './route.js';
import { ledgerError, LedgerErrorCode } from './errors.js';

/** Blocks a reply holds at most. */
export const MAX_BLOCKS_PER_PAGE = 256;
/** Bytes a reply holds at most (the blocks that fit, at least one). */
const MAX_PAGE_BYTES = 16 * 1024 * 1024;

interface Range {
  from: number;
  limit: number;
}

function count(req: Req, name: string, dflt: number | undefined, min: number, max: number): number {
  const v = req.query.get(name);
  if (v === null) {
    if (dflt === undefined) throw ledgerError(LedgerErrorCode.InvalidPagingQuery, `: ${name} is required`);
    return dflt;
  }
  if (!/^\d{1,15}$/.test(v) || Number(v) < min || Number(v) > max)
    throw ledgerError(LedgerErrorCode.InvalidPagingQuery, `: ${name} must be an integer from ${min} to ${max}`);
  return Number(v);
}

function range(req: Req): Range {
  return { from: count(req, 'from', undefined, 0, Number.MAX_SAFE_INTEGER), limit: count(req, 'limit', 64, 1, MAX_BLOCKS_PER_PAGE) };
}

export function clusterRoutes(ledger: Ledger): LedgerRoute[] {
  return [
    ledgerRoute({
      method: 'get',
      path: '/cluster/blocks',
      query: range,
      // Bytes, not JSON: errors only are written with the schema.
      reply: ANY_JSON,
      handler: ({ query }) => {
        const head = ledger.storedHead().blockNum;
        const parts: Buffer[] = [];
        let size = 0;
        for (let n = query.from; n <= head && n < query.from + query.limit; n++) {
          const id = ledger.query.blockId(n);
          const bytes = id === undefined ? undefined : ledger.query.block(id);
          if (bytes === undefined) break;
          if (parts.length > 0 && size + bytes.length > MAX_PAGE_BYTES) break;
          const len = Buffer.allocUnsafe(4);
          len.writeUInt32BE(bytes.length);
          parts.push(len, bytes);
          size += 4 + bytes.length;
        }
        return { status: 200, body: Buffer.concat(parts), contentType: 'application/octet-stream' };
      },
    }),
  ];
}
