/**
 * `circuit sabre-setup`: the one-time Sabre setup of a circuit's state service for the
 * contracts the node carries (the supply-chain contracts and intkey), signed by a circuit
 * admin (a key in the service's `admin_keys`). It reads the service's state first and
 * submits only what is missing, all in one batch (all or nothing): a contract registry
 * per contract, a namespace registry per namespace (owned by the signer), and a read and
 * write permission per contract in its namespace. Run again, it finds everything and
 * submits nothing.
 */
import type { Signer } from '../crypto/secp256k1.js';
import { buildBatch, buildBatchList, type BuiltTxn } from '../ledger/build.js';
import { CARRIED_NAMESPACES, createContractRegistryTxn, createNamespaceRegistryTxn, namespacePermissionTxn } from '../scabbard/payloads.js';
import { ContractRegistryList, NamespaceRegistryList, decode, type NamespaceRegistryMsg, type RegistryMsg } from '../scabbard/proto.js';
import { contractRegistryAddress, namespaceRegistryAddress } from '../scabbard/sabre.js';
import { answerMessage, call, DEFAULT_TIMEOUT_S, NODE_API, type Answer } from './args.js';

export interface SetupOptions {
  /** Node API base URL. */
  url: string;
  /** `Bearer …` of the signer. */
  auth: string;
  signer: Signer;
  circuitId: string;
  serviceId: string;
  /** Seconds to wait for the batch to settle (default 60). */
  waitSeconds?: number;
  /** How long one call to the node API may take, beyond a wait it asks for (ms; default 30 s). */
  timeoutMs?: number;
}

export interface SetupResult {
  ok: boolean;
  message: string;
  /** Transactions submitted (0 when everything was there). */
  submitted: number;
}

export async function sabreSetup(o: SetupOptions): Promise<SetupResult> {
  const base = `${o.url}/scabbard/${encodeURIComponent(o.circuitId)}/${encodeURIComponent(o.serviceId)}`;
  const headers = { authorization: o.auth };
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_S * 1000;
  const ask = (url: string, init: RequestInit = {}, extraMs = 0): Promise<Answer> =>
    call(url, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } }, NODE_API, timeoutMs + extraMs);
  const fail = (what: string, a: Answer): SetupResult => ({
    ok: false,
    message: `${what}: the node API answered ${a.status}: ${answerMessage(a)}`,
    submitted: 0,
  });

  /** The value at `address`, or undefined when it is not set. */
  const state = async (address: string): Promise<Buffer | undefined | Answer> => {
    const a = await ask(`${base}/state/${address}`);
    // 404 is also the answer for a service this node does not run: tell them apart.
    if (a.status === 404) return a.text.includes('Address not set') ? undefined : a;
    if (!a.ok || !Array.isArray(a.json)) return a;
    return Buffer.from(a.json as number[]);
  };

  const txns: BuiltTxn[] = [];
  const planned: string[] = [];
  for (const { namespace, contracts } of CARRIED_NAMESPACES) {
    for (const name of contracts) {
      const v = await state(contractRegistryAddress(name));
      if (v !== undefined && !Buffer.isBuffer(v)) return fail(`reading the contract registry of ${name}`, v);
      const known = v ? decode<{ registries: RegistryMsg[] }>(ContractRegistryList, v).registries : [];
      if (known.some((r) => r.name === name)) continue;
      txns.push(createContractRegistryTxn(o.signer, name, [o.signer.publicKey]));
      planned.push(`contract registry ${name}`);
    }
    const v = await state(namespaceRegistryAddress(namespace));
    if (v !== undefined && !Buffer.isBuffer(v)) return fail(`reading the namespace registry ${namespace}`, v);
    const reg = (v ? decode<{ registries: NamespaceRegistryMsg[] }>(NamespaceRegistryList, v).registries : []).find((r) => r.namespace === namespace);
    if (!reg) {
      txns.push(createNamespaceRegistryTxn(o.signer, namespace, [o.signer.publicKey]));
      planned.push(`namespace registry ${namespace}`);
    }
    for (const name of contracts) {
      if (reg?.permissions.some((p) => p.contractName === name && p.read && p.write)) continue;
      txns.push(namespacePermissionTxn(o.signer, namespace, name, true, true));
      planned.push(`read/write permission of ${name} in ${namespace}`);
    }
  }
  if (txns.length === 0) return { ok: true, message: 'nothing to do: every registry and permission is there', submitted: 0 };

  const batch = buildBatch(o.signer, txns);
  const res = await ask(`${base}/batches`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: Buffer.from(buildBatchList([batch])),
  });
  if (res.status !== 202) return fail('submitting the setup batch', res);
  const wait = o.waitSeconds ?? 60;
  const st = await ask(`${base}/batch_statuses?ids=${batch.id}&wait=${wait}`, {}, wait * 1000);
  if (!st.ok || !Array.isArray(st.json)) return fail('reading the setup batch status', st);
  const [entry] = st.json as Array<{ status: { statusType: string; message: Array<{ error_message?: string }> } }>;
  const type = entry?.status.statusType ?? 'Unknown';
  if (type === 'Committed') return { ok: true, message: `committed: ${planned.join(', ')}`, submitted: txns.length };
  const why = entry?.status.message
    .map((m) => m.error_message)
    .filter(Boolean)
    .join('; ');
  return { ok: false, message: `setup batch ${batch.id} is ${type}${why ? `: ${why}` : ''}`, submitted: txns.length };
}
