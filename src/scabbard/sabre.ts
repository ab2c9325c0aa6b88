/**
 * Sabre as a circuit's state service executes it (research circuits.md §3.4, grid.md §4.1):
 * the registry actions with upstream's permission rules (`sawtooth.swa.administrators`
 * from the service's `admin_keys`, registry owners), and ExecuteContractAction dispatched
 * by contract name to the contracts this node carries (the supply-chain contracts and
 * intkey; no WASM is stored), each read and write allowed only by a namespace registry
 * permission, as upstream checks before running a contract.
 */
import { sha512Hex } from '../crypto/secp256k1.js';
import { applyIntkey } from '../families/intkey.js';
import { GRID_CONTRACTS, SABRE_VERSIONS, createSabreFamily, type SabreContract } from '../families/grid/sabre.js';
import { InvalidTransaction, type Family, type TxnContext, type TxnInfo } from '../families/types.js';
import type { TransactionHeaderMsg } from '../proto/index.js';
import type { FamilyLookup } from '../ledger/catalog.js';
import {
  ContractRegistryList,
  NamespaceRegistryList,
  SabreAct,
  SabrePayload,
  Setting,
  decode,
  encode,
  type NamespaceRegistryMsg,
  type RegistryMsg,
  type SabrePayloadMsg,
} from './proto.js';

export const ADMIN_SETTING = 'sawtooth.swa.administrators';
/** Address of the `sawtooth.swa.administrators` setting (splinter.md §8). */
export const ADMIN_SETTING_ADDRESS = '000000a87cb5eafdcca6a814e4add97c4b517d3c530c2f44b31d18e3b0c44298fc1c14';

export const contractRegistryAddress = (name: string): string => `00ec01${sha512Hex(name).slice(0, 64)}`;
/**
 * Where the registries of a namespace live: as upstream's SDK computes it, from the namespace's
 * first six characters only, so every namespace sharing them (`621dee`, `621dee05`, …) is
 * listed at one address. A shorter namespace has no registry address (checked before).
 */
export const namespaceRegistryAddress = (namespace: string): string => `00ec00${sha512Hex(namespace.slice(0, 6)).slice(0, 64)}`;

/** Namespace → registry address, for the permission check every contract transaction makes. */
const nsAddresses = new Map<string, string>();
function nsAddress(ns: string): string {
  let a = nsAddresses.get(ns);
  if (a === undefined) {
    if (nsAddresses.size >= 4096) nsAddresses.clear();
    a = namespaceRegistryAddress(ns);
    nsAddresses.set(ns, a);
  }
  return a;
}

/**
 * Decoded namespace registries by the value bytes they came from. The state service reads
 * each address once per round (the same bytes object for every transaction of the round),
 * so the registries are decoded once per round, not once per transaction. Read-only use:
 * registry actions decode their own copy, which they change.
 */
const decodedNamespaces = new WeakMap<Uint8Array, readonly NamespaceRegistryMsg[]>();
function namespacesReadOnly(ctx: TxnContext, address: string): readonly NamespaceRegistryMsg[] {
  const v = ctx.get(address);
  if (!v) return [];
  let list = decodedNamespaces.get(v);
  if (list === undefined) {
    list = decode<{ registries: NamespaceRegistryMsg[] }>(NamespaceRegistryList, v).registries;
    decodedNamespaces.set(v, list);
  }
  return list;
}
export const contractAddress = (name: string, version: string): string => `00ec02${sha512Hex(`${name},${version}`).slice(0, 64)}`;

/** The setting value of the initial state: the admin keys comma-joined, in argument order. */
export function adminSettingValue(keys: readonly string[]): Uint8Array {
  return encode(Setting, { entries: [{ key: ADMIN_SETTING, value: keys.join(',') }] });
}

const intkeyContract: SabreContract = {
  name: 'intkey',
  versions: ['1.0', '1'],
  apply(payload, signer, ctx) {
    applyIntkey({ id: '', header: { signerPublicKey: signer } as TransactionHeaderMsg, payload }, ctx);
  },
};

/** The contracts a circuit's Sabre can execute. */
export const SCABBARD_CONTRACTS: readonly SabreContract[] = [...GRID_CONTRACTS, intkeyContract];

const fail = (m: string): never => {
  throw new InvalidTransaction(m);
};

function admins(ctx: TxnContext): string[] {
  const v = ctx.get(ADMIN_SETTING_ADDRESS);
  if (!v) return [];
  const s = decode<{ entries: Array<{ key: string; value: string }> }>(Setting, v);
  const e = s.entries.find((x) => x.key === ADMIN_SETTING);
  return e
    ? e.value
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean)
    : [];
}

function requireAdmin(ctx: TxnContext, signer: string, what: string): void {
  if (!admins(ctx).includes(signer)) fail(`Only admins can ${what}: ${signer} is not in ${ADMIN_SETTING}`);
}

function registries(ctx: TxnContext, address: string): RegistryMsg[] {
  const v = ctx.get(address);
  return v ? decode<{ registries: RegistryMsg[] }>(ContractRegistryList, v).registries : [];
}

function namespaces(ctx: TxnContext, address: string): NamespaceRegistryMsg[] {
  const v = ctx.get(address);
  return v ? decode<{ registries: NamespaceRegistryMsg[] }>(NamespaceRegistryList, v).registries : [];
}

function putSorted<T>(ctx: TxnContext, address: string, type: typeof ContractRegistryList, list: T[], key: (x: T) => string): void {
  if (list.length === 0) return ctx.delete(address);
  list.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  ctx.set(address, encode(type, { registries: list }));
}

/** A namespace shorter than six characters has no registry address (upstream's addressing message; its create action words it without "long"). */
function checkNamespace(ns: string, creating = false): void {
  if (ns.length < 6) fail(`Namespace must be at least 6 characters${creating ? '' : ' long'}: ${ns}`);
}

function ownerOrAdmin(ctx: TxnContext, signer: string, owners: string[], what: string): void {
  if (owners.includes(signer)) return;
  requireAdmin(ctx, signer, what);
}

/** The registry actions (everything but contract execution). */
function registryAction(p: SabrePayloadMsg, signer: string, ctx: TxnContext): void {
  switch (p.action) {
    case SabreAct.CREATE_CONTRACT_REGISTRY: {
      const a = p.createContractRegistry ?? fail('Contract registry action is missing');
      if (!a.name) fail('Contract registry name cannot be empty');
      if (a.owners.length === 0) fail('Contract registry owners cannot be empty');
      const address = contractRegistryAddress(a.name);
      const list = registries(ctx, address);
      if (list.some((r) => r.name === a.name)) fail(`Contract Registry already exists: ${a.name}`);
      requireAdmin(ctx, signer, 'create a contract registry');
      list.push({ name: a.name, versions: [], owners: a.owners });
      return putSorted(ctx, address, ContractRegistryList, list, (r) => r.name);
    }
    case SabreAct.DELETE_CONTRACT_REGISTRY: {
      const a = p.deleteContractRegistry ?? fail('Contract registry action is missing');
      const address = contractRegistryAddress(a.name);
      const list = registries(ctx, address);
      const r = list.find((x) => x.name === a.name) ?? fail(`Contract Registry does not exist: ${a.name}`);
      requireAdmin(ctx, signer, 'delete a contract registry');
      if (r.versions.length) fail(`Contract Registry can only be deleted if there are no versions: ${a.name}`);
      return putSorted(
        ctx,
        address,
        ContractRegistryList,
        list.filter((x) => x !== r),
        (x) => x.name,
      );
    }
    case SabreAct.UPDATE_CONTRACT_REGISTRY_OWNERS: {
      const a = p.updateContractRegistryOwners ?? fail('Contract registry action is missing');
      if (a.owners.length === 0) fail('Contract registry owners cannot be empty');
      const address = contractRegistryAddress(a.name);
      const list = registries(ctx, address);
      const r = list.find((x) => x.name === a.name) ?? fail(`Contract Registry does not exist: ${a.name}`);
      ownerOrAdmin(ctx, signer, r.owners, 'update the owners of a contract registry');
      r.owners = a.owners;
      return putSorted(ctx, address, ContractRegistryList, list, (x) => x.name);
    }
    case SabreAct.CREATE_NAMESPACE_REGISTRY: {
      const a = p.createNamespaceRegistry ?? fail('Namespace registry action is missing');
      checkNamespace(a.namespace, true);
      if (a.owners.length === 0) fail('Namespace registry owners cannot be empty');
      const address = namespaceRegistryAddress(a.namespace);
      const list = namespaces(ctx, address);
      if (list.some((r) => r.namespace === a.namespace)) fail(`Namespace Registry already exists: ${a.namespace}`);
      requireAdmin(ctx, signer, 'create a namespace registry');
      list.push({ namespace: a.namespace, owners: a.owners, permissions: [] });
      return putSorted(ctx, address, NamespaceRegistryList, list, (r) => r.namespace);
    }
    case SabreAct.DELETE_NAMESPACE_REGISTRY: {
      const a = p.deleteNamespaceRegistry ?? fail('Namespace registry action is missing');
      checkNamespace(a.namespace);
      const address = namespaceRegistryAddress(a.namespace);
      const list = namespaces(ctx, address);
      const r = list.find((x) => x.namespace === a.namespace) ?? fail(`Namespace Registry does not exist: ${a.namespace}`);
      ownerOrAdmin(ctx, signer, r.owners, 'delete a namespace registry');
      if (r.permissions.length) fail(`Namespace Registry can only be deleted if there are no permissions: ${a.namespace}`);
      // As upstream's state does: the whole entry goes, with any other registry listed at
      // the same six-character address (a state root must not differ from upstream's).
      return ctx.delete(address);
    }
    case SabreAct.UPDATE_NAMESPACE_REGISTRY_OWNERS: {
      const a = p.updateNamespaceRegistryOwners ?? fail('Namespace registry action is missing');
      checkNamespace(a.namespace);
      if (a.owners.length === 0) fail('Namespace registry owners cannot be empty');
      const address = namespaceRegistryAddress(a.namespace);
      const list = namespaces(ctx, address);
      const r = list.find((x) => x.namespace === a.namespace) ?? fail(`Namespace Registry does not exist: ${a.namespace}`);
      ownerOrAdmin(ctx, signer, r.owners, 'update the owners of a namespace registry');
      r.owners = a.owners;
      return putSorted(ctx, address, NamespaceRegistryList, list, (x) => x.namespace);
    }
    case SabreAct.CREATE_NAMESPACE_REGISTRY_PERMISSION: {
      const a = p.createNamespaceRegistryPermission ?? fail('Namespace permission action is missing');
      checkNamespace(a.namespace);
      const address = namespaceRegistryAddress(a.namespace);
      const list = namespaces(ctx, address);
      const r = list.find((x) => x.namespace === a.namespace) ?? fail(`Namespace Registry does not exist: ${a.namespace}`);
      ownerOrAdmin(ctx, signer, r.owners, 'create a namespace registry permission');
      r.permissions = r.permissions.filter((x) => x.contractName !== a.contractName);
      r.permissions.push({ contractName: a.contractName, read: a.read, write: a.write });
      return putSorted(ctx, address, NamespaceRegistryList, list, (x) => x.namespace);
    }
    case SabreAct.DELETE_NAMESPACE_REGISTRY_PERMISSION: {
      const a = p.deleteNamespaceRegistryPermission ?? fail('Namespace permission action is missing');
      checkNamespace(a.namespace);
      const address = namespaceRegistryAddress(a.namespace);
      const list = namespaces(ctx, address);
      const r = list.find((x) => x.namespace === a.namespace) ?? fail(`Namespace Registry does not exist: ${a.namespace}`);
      ownerOrAdmin(ctx, signer, r.owners, 'delete a namespace registry permission');
      r.permissions = r.permissions.filter((x) => x.contractName !== a.contractName);
      return putSorted(ctx, address, NamespaceRegistryList, list, (x) => x.namespace);
    }
    default:
      return fail(`Sabre action ${p.action} is not supported by this node (contracts are built in; no WASM is stored)`);
  }
}

/**
 * Upstream's check before a contract runs, in its words: each input and output is governed by
 * the registries listed at its first six characters' address, and among those by the last
 * (in stored order, sorted by namespace: the longest) whose namespace is a prefix of it.
 */
function checkContractPermissions(p: SabrePayloadMsg, ctx: TxnContext): void {
  const a = p.executeContract;
  if (!a) return;
  const check = (prefixes: string[], kind: 'read' | 'write'): void => {
    for (const prefix of prefixes) {
      if (prefix.length < 6) fail(`${kind === 'read' ? 'Input' : 'Output'} must have at least 6 characters: ${prefix}`);
      const ns = prefix.slice(0, 6);
      const list = namespacesReadOnly(ctx, nsAddress(ns));
      if (list.length === 0) fail(`Namespace Registry does not exist: ${ns}`);
      let reg: NamespaceRegistryMsg | undefined;
      for (const r of list) if (prefix.startsWith(r.namespace)) reg = r;
      if (!reg) fail(`No namespace registry exists for namespace: ${ns} ${kind === 'read' ? 'input' : 'output'}: ${prefix}`);
      if (!reg?.permissions.some((x) => x.contractName === a.name && x[kind])) {
        // Upstream's two messages differ in punctuation.
        fail(
          kind === 'read'
            ? `Contract does not have permission to read from state : ${a.name} ${prefix}`
            : `Contract does not have permission to write to state: ${a.name}, ${prefix}`,
        );
      }
    }
  };
  check(a.inputs, 'read');
  check(a.outputs, 'write');
}

const executor = createSabreFamily([...SCABBARD_CONTRACTS]);

/** The `sabre` family of a circuit ledger. */
export const scabbardSabre: Family = {
  name: 'sabre',
  versions: SABRE_VERSIONS,
  namespaces: ['00ec00', '00ec01', '00ec02', '00ec03', '000000'],
  apply(txn: TxnInfo, ctx: TxnContext): void {
    let p: SabrePayloadMsg;
    try {
      p = decode<SabrePayloadMsg>(SabrePayload, txn.payload);
    } catch {
      return fail('Sabre payload is not a valid SabrePayload');
    }
    if (p.action !== SabreAct.EXECUTE_CONTRACT) return registryAction(p, txn.header.signerPublicKey, ctx);
    checkContractPermissions(p, ctx);
    executor.apply(txn, ctx);
  },
};

/** A circuit ledger's families by name (the verify workers' list for its checks): Sabre only. */
export const SCABBARD_FAMILY_NAMES: string[] = ['sabre'];

/** A circuit ledger executes Sabre only. */
export const scabbardFamilies: FamilyLookup = (name, version) => (name === 'sabre' && SABRE_VERSIONS.includes(version) ? scabbardSabre : undefined);
