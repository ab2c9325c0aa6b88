/** Read helpers over the committed chain (HTTP thread, synchronous LMDB reads). */
import type { Ledger } from '../ledger/ledger.js';
import type { ChainHead } from '../store/ledgerStores.js';
import { blockNumOf, decodeBlockHeader } from './json.js';
import { Block, type BlockMsg } from '../proto/index.js';
import { ledgerError } from './errors.js';
import { ID_RE } from './params.js';

export interface ResolvedHead {
  id: string;
  num: number;
  stateRoot: string;
}

export function currentHead(ledger: Ledger): ChainHead {
  return ledger.storedHead();
}

export function blockBytes(ledger: Ledger, id: string): Buffer | undefined {
  return ledger.stores.blocks.get(id);
}

export function blockByNum(ledger: Ledger, num: number): Buffer | undefined {
  const id = ledger.stores.blockByNum.get(num);
  return id === undefined ? undefined : ledger.stores.blocks.get(id);
}

export function decodeBlock(bytes: Uint8Array): BlockMsg {
  return Block.decode(bytes) as unknown as BlockMsg;
}

/**
 * Resolves the `head` query: the current head when absent. `notFound` is the error code
 * for an unknown head (50 on block/batch/transaction lists, 70 on state routes).
 */
export function resolveHead(ledger: Ledger, head: string | null, notFound: 50 | 70, checkFormat: boolean): ResolvedHead {
  if (head === null || head === '') {
    const h = currentHead(ledger);
    return { id: h.blockId, num: h.blockNum, stateRoot: h.stateRoot };
  }
  if (checkFormat && !ID_RE.test(head)) throw ledgerError(60, head);
  const bytes = blockBytes(ledger, head);
  if (!bytes) throw ledgerError(notFound);
  const header = decodeBlockHeader(decodeBlock(bytes).header);
  return { id: head, num: blockNumOf(header), stateRoot: header.stateRootHash };
}
