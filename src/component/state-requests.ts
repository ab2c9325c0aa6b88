/**
 * A transaction processor's state requests (get, set, delete) during a transaction it is
 * running for the component endpoint (src/component/server.ts): answered from that
 * transaction's context, so each transaction sees the writes of those before it. A request
 * naming a context that is not the processor's own, or an address outside the
 * transaction's inputs/outputs, is answered AUTHORIZATION_ERROR, as the validator does.
 * `ctx` is that context, undefined when the context is not the asking processor's. The
 * receipt data and events it adds to the transaction are taken here too (answered ERROR
 * when the context is not its own).
 */
import { InvalidTransaction, type TxnContext } from '../families/types.js';
import { log } from '../log.js';
import * as P from './proto.js';

/**
 * Longest attribute value of an event a processor adds (characters); an event with a longer
 * one is refused (TpEventAddResponse ERROR). Attribute values are what subscribers' filters
 * match (src/component/filters.ts): one regular expression evaluation costs up to its
 * program size times the value's length, so this bounds what one value costs. Upstream has
 * no bound but the message size; ids, keys and addresses are far shorter.
 */
export const EVENT_VALUE_LIMIT = 4096;

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

export function receiptAddData(ctx: TxnContext | undefined, m: P.ReceiptAddDataRequestMsg): object {
  if (ctx) ctx.addReceiptData(m.data);
  return { status: ctx ? P.AckStatus.OK : P.AckStatus.ERROR };
}

/** `who`: the processor, as the log names it. */
export function eventAdd(ctx: TxnContext | undefined, m: P.EventAddRequestMsg, who: string): object {
  const event = m.event;
  const long = event?.attributes.find((a) => a.value.length > EVENT_VALUE_LIMIT);
  if (event && long) {
    log.warn(
      `transaction processor ${who}: event ${event.eventType.slice(0, 64)} refused, its attribute "${long.key.slice(0, 64)}" is ${long.value.length} characters long (at most ${EVENT_VALUE_LIMIT})`,
    );
  }
  const ok = ctx !== undefined && event !== null && event !== undefined && event.eventType !== '' && long === undefined;
  if (ok) {
    ctx.addEvent(
      event.eventType,
      event.attributes.map((a) => ({ key: a.key, value: a.value })),
      event.data,
    );
  }
  return { status: ok ? P.AckStatus.OK : P.AckStatus.ERROR };
}
