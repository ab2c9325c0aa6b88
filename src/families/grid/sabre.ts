/**
 * The `sabre` family as upstream clients use it for the supply-chain contracts: a
 * SabrePayload carrying ExecuteContractAction{name, version, inputs, outputs, payload}.
 * The contracts are built in (no WASM is stored or run): the action is dispatched by
 * contract name to the matching family module, which then sees a context limited to the
 * action's declared input and output prefixes (on top of the transaction header's, which
 * the engine enforces).
 */
import { InvalidTransaction, type EventAttribute, type Family, type TxnContext, type TxnInfo } from '../types.js';
import { GRID_NAMESPACE } from './addressing.js';
import { G, SabreAction, decodeMsg, invalid } from './common.js';
import { applyLocation, LOCATION_FAMILY } from './location.js';
import { applyPike, PIKE_FAMILY } from './pike.js';
import { applyProduct, PRODUCT_FAMILY } from './product.js';
import { applyPurchaseOrder, PURCHASE_ORDER_FAMILY } from './purchase-order.js';
import { applySchema, SCHEMA_FAMILY } from './schema.js';

export const SABRE_FAMILY = 'sabre';
/** Sabre family versions clients send (Grid's CLI uses 0.5). */
export const SABRE_VERSIONS = ['0.5', '0.6', '1'];
/** Sabre's registries (namespace, contract registry, contract, smart permission). */
export const SABRE_NAMESPACES = ['00ec00', '00ec01', '00ec02', '00ec03'];

/** A built-in contract: what a Sabre ExecuteContractAction can name. */
export interface SabreContract {
  name: string;
  versions: string[];
  apply(payload: Uint8Array, signer: string, ctx: TxnContext): void;
}

export const GRID_CONTRACTS: SabreContract[] = [
  { name: PIKE_FAMILY, versions: ['1', '2'], apply: applyPike },
  { name: SCHEMA_FAMILY, versions: ['1', '2'], apply: applySchema },
  { name: PRODUCT_FAMILY, versions: ['1', '2'], apply: applyProduct },
  { name: LOCATION_FAMILY, versions: ['1', '2'], apply: applyLocation },
  { name: PURCHASE_ORDER_FAMILY, versions: ['1', '2'], apply: applyPurchaseOrder },
];

interface SabrePayloadMsg {
  action: number;
  executeContract?: ExecuteContractMsg | null;
}
export interface ExecuteContractMsg {
  name: string;
  version: string;
  inputs: string[];
  outputs: string[];
  payload: Uint8Array;
}

/** Handles Sabre actions other than EXECUTE_CONTRACT (e.g. registry management). */
export type SabreFallback = (action: number, txn: TxnInfo, ctx: TxnContext) => void;

const PREFIX_RE = /^(?:[0-9a-f]{2}){3,35}$/;

function checkPrefixes(kind: string, prefixes: string[]): void {
  for (const p of prefixes) {
    if (!PREFIX_RE.test(p)) invalid(`${kind} must be at least 6 characters long: ${p}`);
  }
}

/** A context that refuses addresses outside the contract action's declared prefixes. */
function restrictedContext(ctx: TxnContext, action: ExecuteContractMsg): TxnContext {
  const covered = (prefixes: string[], address: string): boolean => prefixes.some((p) => address.startsWith(p));
  return {
    get(address: string): Uint8Array | undefined {
      if (!covered(action.inputs, address)) {
        throw new InvalidTransaction(`Contract ${action.name} read ${address}, which is not among its inputs`);
      }
      return ctx.get(address);
    },
    set(address: string, value: Uint8Array): void {
      if (!covered(action.outputs, address)) {
        throw new InvalidTransaction(`Contract ${action.name} wrote ${address}, which is not among its outputs`);
      }
      ctx.set(address, value);
    },
    delete(address: string): void {
      if (!covered(action.outputs, address)) {
        throw new InvalidTransaction(`Contract ${action.name} deleted ${address}, which is not among its outputs`);
      }
      ctx.delete(address);
    },
    addEvent(eventType: string, attributes: EventAttribute[], data?: Uint8Array): void {
      ctx.addEvent(eventType, attributes, data);
    },
    addReceiptData(data: Uint8Array): void {
      ctx.addReceiptData(data);
    },
  };
}

/** Decodes a Sabre payload's contract execution, or undefined for any other action. */
export function decodeExecuteContract(payload: Uint8Array): ExecuteContractMsg | undefined {
  const p = decodeMsg<SabrePayloadMsg>(G.SabrePayload, payload, 'sabre payload');
  if (p.action !== SabreAction.EXECUTE_CONTRACT) return undefined;
  return p.executeContract ?? undefined;
}

export function createSabreFamily(contracts: SabreContract[], fallback?: SabreFallback): Family {
  const byName = new Map(contracts.map((c) => [c.name, c]));
  return {
    name: SABRE_FAMILY,
    versions: SABRE_VERSIONS,
    namespaces: [...SABRE_NAMESPACES, GRID_NAMESPACE],
    apply(txn: TxnInfo, ctx: TxnContext): void {
      const p = decodeMsg<SabrePayloadMsg>(G.SabrePayload, txn.payload, 'sabre payload');
      if (p.action !== SabreAction.EXECUTE_CONTRACT) {
        if (fallback) return fallback(p.action, txn, ctx);
        const name = G.SabrePayload.lookupEnum('Action').valuesById[p.action] ?? String(p.action);
        return invalid(`Sabre action ${name} is not supported`);
      }
      const action = p.executeContract;
      if (!action) return invalid('Sabre payload has no execute_contract action');
      const contract = byName.get(action.name);
      if (contract === undefined || !contract.versions.includes(action.version)) {
        return invalid(`Contract does not exist: ${action.name}, ${action.version}`);
      }
      checkPrefixes('Input', action.inputs);
      checkPrefixes('Output', action.outputs);
      contract.apply(action.payload, txn.header.signerPublicKey, restrictedContext(ctx, action));
    },
  };
}

/** Executes the built-in supply-chain contracts. */
export const sabreFamily: Family = createSabreFamily(GRID_CONTRACTS);
