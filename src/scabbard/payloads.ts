/**
 * Sabre transactions for a circuit's state service: the registry actions (what a circuit
 * admin runs once) and contract execution, with the header inputs/outputs upstream's
 * clients compute (research grid.md §4.1).
 */
import { randomBytes } from 'node:crypto';
import type { Signer } from '../crypto/secp256k1.js';
import { buildBatch, buildTransaction, type BuiltBatch, type BuiltTxn } from '../ledger/build.js';
import { ADMIN_SETTING_ADDRESS, contractAddress, contractRegistryAddress, namespaceRegistryAddress } from './sabre.js';
import { SabreAct, SabrePayload, encode } from './proto.js';

export function sabreTxn(signer: Signer, payload: object, inputs: string[], outputs: string[]): BuiltTxn {
  return buildTransaction(signer, {
    familyName: 'sabre',
    familyVersion: '0.5',
    inputs,
    outputs,
    payload: encode(SabrePayload, payload),
    nonce: randomBytes(16).toString('hex'),
  });
}

export function createContractRegistryTxn(signer: Signer, name: string, owners: string[]): BuiltTxn {
  const addrs = [contractRegistryAddress(name), ADMIN_SETTING_ADDRESS];
  return sabreTxn(signer, { action: SabreAct.CREATE_CONTRACT_REGISTRY, createContractRegistry: { name, owners } }, addrs, addrs);
}

export function createNamespaceRegistryTxn(signer: Signer, namespace: string, owners: string[]): BuiltTxn {
  const addrs = [namespaceRegistryAddress(namespace), ADMIN_SETTING_ADDRESS];
  return sabreTxn(signer, { action: SabreAct.CREATE_NAMESPACE_REGISTRY, createNamespaceRegistry: { namespace, owners } }, addrs, addrs);
}

export function namespacePermissionTxn(signer: Signer, namespace: string, contractName: string, read: boolean, write: boolean): BuiltTxn {
  const addrs = [namespaceRegistryAddress(namespace), ADMIN_SETTING_ADDRESS];
  return sabreTxn(
    signer,
    { action: SabreAct.CREATE_NAMESPACE_REGISTRY_PERMISSION, createNamespaceRegistryPermission: { namespace, contractName, read, write } },
    addrs,
    addrs,
  );
}

/** ExecuteContractAction of a carried contract, with the header's Sabre inputs/outputs. */
export function executeContractTxn(
  signer: Signer,
  name: string,
  version: string,
  inputs: string[],
  outputs: string[],
  payload: Uint8Array,
): BuiltTxn {
  const head = [contractRegistryAddress(name), contractAddress(name, version)];
  const ns = (ps: string[]): string[] => [...new Set(ps.map((p) => namespaceRegistryAddress(p.slice(0, 6))))];
  return sabreTxn(
    signer,
    { action: SabreAct.EXECUTE_CONTRACT, executeContract: { name, version, inputs, outputs, payload } },
    [...head, ...ns(inputs), ...inputs],
    [...head, ...ns(outputs), ...outputs],
  );
}

/**
 * The one-time setup of a circuit for the carried contracts: the namespace registries
 * (owned by the signer, a circuit admin) and read/write permissions for each contract.
 */
export function namespaceSetupBatches(signer: Signer, grants: ReadonlyArray<{ namespace: string; contracts: string[] }>): BuiltBatch[] {
  return grants.map((g) =>
    buildBatch(signer, [
      createNamespaceRegistryTxn(signer, g.namespace, [signer.publicKey]),
      ...g.contracts.map((c) => namespacePermissionTxn(signer, g.namespace, c, true, true)),
    ]),
  );
}

/** The supply-chain namespace (`621dee`) and intkey's (`1cf126`) with their contracts. */
export const CARRIED_NAMESPACES = [
  { namespace: '621dee', contracts: ['grid_pike', 'grid_schema', 'grid_product', 'grid_location', 'grid_purchase_order'] },
  { namespace: '1cf126', contracts: ['intkey'] },
] as const;

export { buildBatch, type BuiltBatch };
