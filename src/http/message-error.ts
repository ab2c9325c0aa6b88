/**
 * The error body of the node API and the data API: `{"message": "..."}` (the ledger
 * gateway has its own, numbered, in src/ledger-api/errors.ts). Both interfaces' servers
 * are built with it as their `errorReply`.
 */
import type { Reply } from './types.js';

export function messageErrorReply(status: number, message: string): Reply {
  return { status, body: JSON.stringify({ message }) };
}
