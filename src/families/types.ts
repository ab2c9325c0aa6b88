/**
 * The transaction family contract. A family is pure and deterministic: given a
 * transaction and a state context it reads and writes addresses, emits events and
 * receipt data, or throws InvalidTransaction. It runs wherever the engine executes
 * transactions (the committer thread today, pool workers later), so it must not do I/O.
 */
import type { TransactionHeaderMsg } from '../proto/index.js';

export class InvalidTransaction extends Error {
  readonly extendedData: Uint8Array | undefined;
  constructor(message: string, extendedData?: Uint8Array) {
    super(message);
    this.name = 'InvalidTransaction';
    this.extendedData = extendedData;
  }
}

export interface TxnInfo {
  /** Transaction id (its header_signature). */
  id: string;
  header: TransactionHeaderMsg;
  payload: Uint8Array;
}

export interface EventAttribute {
  key: string;
  value: string;
}

export interface TxnContext {
  /** Raw value at a full 70-hex address, or undefined. Throws InvalidTransaction when
   * the address is not covered by the transaction's inputs. */
  get(address: string): Uint8Array | undefined;
  /** Throws InvalidTransaction when the address is not covered by the outputs. */
  set(address: string, value: Uint8Array): void;
  /** Deleting an absent address is a no-op. Checked against outputs. */
  delete(address: string): void;
  addEvent(eventType: string, attributes: EventAttribute[], data?: Uint8Array): void;
  addReceiptData(data: Uint8Array): void;
}

export interface Family {
  name: string;
  versions: string[];
  /** 6-hex address prefixes this family writes. */
  namespaces: string[];
  apply(txn: TxnInfo, ctx: TxnContext): void;
}
