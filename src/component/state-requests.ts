/**
 * A transaction processor's state requests (get, set, delete) during a transaction it is
 * running for the component endpoint (src/component/server.ts): answered from that
 * transaction's context, so each transaction sees the writes of those before it. A request
 * naming a context that is not the processor's own, or an address outside the
 * transaction's inputs/outputs, is answered AUTHORIZATION_ERROR, as the validator does.
 * `ctx` is that context, undefined when the context is not the asking processor's.
 */
import { InvalidTransaction, type TxnContext } from '../families/types.js';
import * as P from './proto.js';

export function stateGet(ctx: TxnContext | undefined, m: P.ContextAddressesMsg): object {
  if (!ctx) return { status: P.StateStatus.AUTHORIZATION_ERROR };
  const entries: P.StateEntryMsg[] = [];
  try {
    for (const address of m.addresses) {
      const data = ctx.get(address);
      // Addresses without a value are left out, as the validator does.
      if (data !== undefined) entries.push({ address, data });
    }
  } catch (err) {
    if (err instanceof InvalidTransaction) return { status: P.StateStatus.AUTHORIZATION_ERROR };
    throw err;
  }
  return { entries, status: P.StateStatus.OK };
}

export function stateSet(ctx: TxnContext | undefined, m: P.StateSetRequestMsg): object {
  if (!ctx) return { status: P.StateStatus.AUTHORIZATION_ERROR };
  try {
    for (const e of m.entries) ctx.set(e.address, e.data);
  } catch (err) {
    if (err instanceof InvalidTransaction) return { status: P.StateStatus.AUTHORIZATION_ERROR };
    throw err;
  }
  return { addresses: m.entries.map((e) => e.address), status: P.StateStatus.OK };
}

export function stateDelete(ctx: TxnContext | undefined, m: P.ContextAddressesMsg): object {
  if (!ctx) return { status: P.StateStatus.AUTHORIZATION_ERROR };
  try {
    for (const a of m.addresses) ctx.delete(a);
  } catch (err) {
    if (err instanceof InvalidTransaction) return { status: P.StateStatus.AUTHORIZATION_ERROR };
    throw err;
  }
  return { addresses: m.addresses, status: P.StateStatus.OK };
}
