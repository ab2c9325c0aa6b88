/**
 * Property values (products, locations) and property definitions (schemas) in request
 * bodies: the spec's `{name, data_type, value}` (upstream's typed `*_value` fields are
 * accepted too), checked field by field with the builder's own converters so that a bad
 * value is a 400 naming the property's path.
 */
import { GridBuildError, dataTypeValue, propertyDefinition, propertyValue } from '../families/grid/build.js';
import type { PropertyDefinitionRecord } from '../ledger/read-model/records.js';
import { at, bad, checkShape, isObj, type Obj, type Shape } from './validate.js';

const VALUE_SHAPE: Shape = {
  name: 'string',
  data_type: 'any',
  value: 'any',
  service_id: 'string',
  bytes_value: 'any',
  boolean_value: 'any',
  number_value: 'any',
  string_value: 'any',
  enum_value: 'any',
  struct_values: 'any',
  lat_long_value: 'any',
};

const DEFINITION_SHAPE: Shape = {
  name: 'string',
  schema_name: 'string',
  data_type: 'any',
  description: 'string',
  required: 'boolean',
  value: 'any',
  number_exponent: 'any',
  enum_options: 'strings',
  struct_properties: 'array',
  service_id: 'string',
};

function converted<T>(path: string, f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof GridBuildError) throw bad(`\`${path}\`: ${err.message}`);
    throw err;
  }
}

function checkValue(v: unknown, path: string): void {
  const o = checkShape(v, VALUE_SHAPE, path);
  converted(path, () => propertyValue(o));
  const structType = 6;
  if (dataTypeValue(o.data_type) === structType) {
    const key = o.value !== undefined ? 'value' : 'struct_values';
    for (const [i, s] of (o[key] as unknown[]).entries()) checkValue(s, at(at(path, key), i));
  }
}

/** Checks a `properties` array of values; returns it unchanged for the builder. */
export function checkPropertyValues(v: unknown, path: string): unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw bad(`\`${path}\` must be an array`);
  for (const [i, p] of v.entries()) checkValue(p, at(path, i));
  return v;
}

function checkDefinition(v: unknown, path: string): void {
  const o = checkShape(v, DEFINITION_SHAPE, path);
  converted(path, () => propertyDefinition(o));
  for (const [i, s] of ((o.struct_properties as unknown[] | undefined) ?? []).entries()) checkDefinition(s, at(at(path, 'struct_properties'), i));
}

export function checkPropertyDefinitions(v: unknown, path: string): unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw bad(`\`${path}\` must be an array`);
  for (const [i, p] of v.entries()) checkDefinition(p, at(path, i));
  return v;
}

/** A definition in comparable form (data type by number, defaults filled in). */
function normalDefinition(v: unknown): string {
  const d = propertyDefinition(v) as Obj;
  const norm = (x: Obj): Obj => ({
    ...x,
    numberExponent: x.numberExponent ?? 0,
    structProperties: (x.structProperties as Obj[]).map(norm),
  });
  return JSON.stringify(norm(d));
}

/**
 * Schema updates are append-only on the ledger: definitions the schema already holds
 * unchanged are dropped from the update (so a client may PUT back the whole list);
 * changed ones are kept, and the contract refuses them.
 */
export function newDefinitions(sent: unknown[], stored: PropertyDefinitionRecord[]): unknown[] {
  const have = new Map(stored.map((d) => [d.name, normalDefinition(d)]));
  return sent.filter((d) => !(isObj(d) && typeof d.name === 'string' && have.get(d.name) === normalDefinition(d)));
}
