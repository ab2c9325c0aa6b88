/**
 * The node registry: validation and storage, with an
 * endpoint → identity index so that no endpoint belongs to two nodes.
 */
import { Conflict, Invalid } from '../store/record-errors.js';
import { field, isObject, type JsonObject } from './body.js';
import { idFits, MAX_ID_BYTES } from '../http/ids.js';
import type { RegistryNodeRecord, Stores } from './stores.js';

const invalid = (msg: string): Invalid => new Invalid(`Invalid node: ${msg}`);
const MAX_STR = 1024;

function stringField(b: JsonObject, name: string): string {
  const v = field(b, name);
  if (v === undefined || v === null) throw invalid(`missing field "${name}"`);
  if (typeof v !== 'string') throw invalid(`field "${name}" must be a string`);
  if (v.length > MAX_STR) throw invalid(`field "${name}" is longer than ${MAX_STR} characters`);
  return v;
}

function stringList(b: JsonObject, name: string): string[] {
  const v = field(b, name);
  if (v === undefined || v === null) throw invalid(`missing field "${name}"`);
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw invalid(`field "${name}" must be an array of strings`);
  if (v.length > 100) throw invalid(`field "${name}" has more than 100 entries`);
  if ((v as string[]).some((s) => s.length > MAX_STR)) throw invalid(`an entry of "${name}" is longer than ${MAX_STR} characters`);
  return v as string[];
}

function metadataField(b: JsonObject): Record<string, string> {
  const v = field(b, 'metadata');
  if (v === undefined || v === null) throw invalid('missing field "metadata"');
  if (!isObject(v)) throw invalid('field "metadata" must be an object of string values');
  const entries = Object.entries(v);
  for (const [k, val] of entries) {
    if (typeof val !== 'string') throw invalid(`metadata "${k.slice(0, 40)}" must be a string`);
    // It would be lost to a prototype assignment here, and renamed by the store's encoder.
    if (k === '__proto__') throw invalid('metadata key "__proto__" is reserved');
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** Reads and validates a node from a request body (all five fields required). */
export function nodeFromBody(b: JsonObject): RegistryNodeRecord {
  const n: RegistryNodeRecord = {
    identity: stringField(b, 'identity'),
    endpoints: stringList(b, 'endpoints'),
    display_name: stringField(b, 'display_name'),
    keys: stringList(b, 'keys'),
    metadata: metadataField(b),
  };
  if (n.identity === '') throw invalid('node must have non-empty identity');
  if (n.identity.length > 256) throw invalid('node identity must be at most 256 characters');
  if (n.endpoints.length === 0) throw invalid('node must have one or more endpoints');
  if (n.endpoints.some((e) => e === '')) throw invalid('node endpoint cannot be empty');
  // Identities and endpoints are store keys.
  if (!idFits(n.identity)) throw invalid(`node identity must be at most ${MAX_ID_BYTES} bytes (UTF-8)`);
  if (!n.endpoints.every(idFits)) throw invalid(`a node endpoint must be at most ${MAX_ID_BYTES} bytes (UTF-8)`);
  if (new Set(n.endpoints).size !== n.endpoints.length) throw invalid('node endpoints must be unique');
  if (n.display_name === '') throw invalid('node must have non-empty display_name');
  if (n.keys.length === 0) throw invalid('node must have one or more keys');
  if (n.keys.some((k) => k === '')) throw invalid('node key cannot be empty');
  return n;
}

export function nodeJson(n: RegistryNodeRecord): RegistryNodeRecord {
  return { identity: n.identity, endpoints: n.endpoints, display_name: n.display_name, keys: n.keys, metadata: n.metadata };
}

export class Registry {
  readonly #s: Stores;

  constructor(stores: Stores) {
    this.#s = stores;
  }

  list(): RegistryNodeRecord[] {
    return Array.from(this.#s.registry.getRange({}).map(({ value }) => value));
  }

  get(identity: string): RegistryNodeRecord | undefined {
    return this.#s.registry.get(identity);
  }

  /** Adds (`replace` false: 409 if present) or adds-or-replaces a node; true when it was new. */
  put(n: RegistryNodeRecord, replace: boolean): Promise<boolean> {
    return this.#s.root.transaction(() => {
      const old = this.#s.registry.get(n.identity);
      if (old && !replace) throw new Conflict(`Invalid node: a node with identity ${n.identity} already exists`);
      for (const e of n.endpoints) {
        const owner = this.#s.registryEndpoints.get(e);
        if (owner !== undefined && owner !== n.identity) throw invalid(`another node with endpoint ${e} exists`);
      }
      for (const e of old?.endpoints ?? []) void this.#s.registryEndpoints.remove(e);
      for (const e of n.endpoints) void this.#s.registryEndpoints.put(e, n.identity);
      void this.#s.registry.put(n.identity, n);
      return !old;
    });
  }

  remove(identity: string): Promise<boolean> {
    return this.#s.root.transaction(() => {
      const old = this.#s.registry.get(identity);
      if (!old) return false;
      for (const e of old.endpoints) void this.#s.registryEndpoints.remove(e);
      void this.#s.registry.remove(identity);
      return true;
    });
  }
}
