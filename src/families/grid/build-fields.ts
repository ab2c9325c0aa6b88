/**
 * Readers and converters for the JSON fields of data-API actions: typed field access,
 * metadata and alternate-id forms, data types, property values and definitions. Bad
 * input throws GridBuildError.
 */
import { DATA_TYPE_NAMES, DataType } from './common.js';
import { show } from '../../codec/show.js';

export class GridBuildError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GridBuildError';
  }
}

export type Obj = Record<string, unknown>;

export function fail(message: string): never {
  throw new GridBuildError(message);
}

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function str(o: Obj, key: string, required = false): string {
  const v = o[key];
  if (v === undefined || v === null) {
    if (required) fail(`\`${key}\` is required`);
    return '';
  }
  if (typeof v !== 'string') fail(`\`${key}\` must be a string`);
  if (required && v === '') fail(`\`${key}\` must not be empty`);
  return v;
}

export function bool(o: Obj, key: string, dflt: boolean): boolean {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') fail(`\`${key}\` must be a boolean`);
  return v;
}

export function uint(o: Obj, key: string, dflt: number): number {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(`\`${key}\` must be a non-negative integer`);
  return v;
}

export function strings(o: Obj, key: string): string[] {
  const v = o[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) fail(`\`${key}\` must be an array of strings`);
  return v as string[];
}

export function list(o: Obj, key: string): unknown[] {
  const v = o[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(`\`${key}\` must be an array`);
  return v;
}

/**
 * Metadata as `[{key, value}]`, `[{k: v}]` (the data API's single-entry objects) or a
 * `{k: v}` map; values must be strings.
 */
export function metadataEntries(v: unknown): Array<{ key: string; value: string }> {
  if (v === undefined || v === null) return [];
  const out: Array<{ key: string; value: string }> = [];
  const push = (key: string, value: unknown): void => {
    if (typeof value !== 'string') fail(`metadata value of \`${key}\` must be a string`);
    out.push({ key, value });
  };
  if (Array.isArray(v)) {
    for (const e of v) {
      if (!isObj(e)) fail('metadata entries must be objects');
      const keys = Object.keys(e);
      if (keys.length === 2 && 'key' in e && 'value' in e && typeof e.key === 'string') push(e.key, e.value);
      else if (keys.length === 1) push(keys[0] as string, e[keys[0] as string]);
      else fail('metadata entries must be {key, value} or single-entry objects');
    }
    return out;
  }
  if (isObj(v)) {
    for (const [key, value] of Object.entries(v)) push(key, value);
    return out;
  }
  return fail('metadata must be an array or an object');
}

/** Organization alternate ids as `"<id_type>:<id>"` strings or `{id_type, id}` objects. */
export function alternateIds(v: unknown): Array<{ idType: string; id: string }> {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail('`alternate_ids` must be an array');
  return v.map((e) => {
    if (typeof e === 'string') {
      const i = e.indexOf(':');
      if (i <= 0 || i === e.length - 1) fail(`alternate id must look like <id_type>:<id>: ${e}`);
      return { idType: e.slice(0, i), id: e.slice(i + 1) };
    }
    if (isObj(e)) return { idType: str(e, 'id_type', true), id: str(e, 'id', true) };
    return fail('alternate ids must be strings or objects');
  });
}

const DATA_TYPE_ALIASES: Record<string, number> = {
  bytes: DataType.BYTES,
  boolean: DataType.BOOLEAN,
  bool: DataType.BOOLEAN,
  number: DataType.NUMBER,
  string: DataType.STRING,
  enum: DataType.ENUM,
  struct: DataType.STRUCT,
  lat_long: DataType.LAT_LONG,
  latlong: DataType.LAT_LONG,
  location: DataType.LAT_LONG,
};

/** Accepts `STRING`, `String`, `string`, `LAT_LONG`, `LatLong`, `LOCATION`, or the number. */
export function dataTypeValue(v: unknown): number {
  if (typeof v === 'number' && Number.isInteger(v) && v > DataType.UNSET_DATA_TYPE && v < DATA_TYPE_NAMES.length) return v;
  if (typeof v === 'string') {
    const k = v.toLowerCase();
    // Own names only: `constructor` or `toString` is no data type.
    const alias = Object.hasOwn(DATA_TYPE_ALIASES, k) ? DATA_TYPE_ALIASES[k] : undefined;
    if (alias !== undefined) return alias;
  }
  return fail(`unknown data_type: ${show(v)}`);
}

function base64Bytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return v;
  if (typeof v === 'string') return new Uint8Array(Buffer.from(v, 'base64'));
  if (Array.isArray(v) && v.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) return Uint8Array.from(v);
  return fail('bytes values must be base64 strings or arrays of bytes');
}

function int64(v: unknown, what: string): number | string {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && /^-?[0-9]+$/.test(v)) return v;
  if (typeof v === 'bigint') return v.toString();
  return fail(`${what} must be an integer`);
}

/**
 * A property value: `{name, data_type, value}` (the data API's shape) or upstream's typed
 * fields (`string_value`, `number_value`, ...).
 */
export function propertyValue(v: unknown): Obj {
  if (!isObj(v)) fail('properties must be objects');
  const name = str(v, 'name', true);
  const dataType = dataTypeValue(v.data_type);
  const out: Obj = { name, dataType };
  const pick = (typed: string): unknown => (v.value !== undefined ? v.value : v[typed]);
  const val = (typed: string): unknown => {
    const x = pick(typed);
    if (x === undefined || x === null) fail(`property ${name} has no value`);
    return x;
  };
  switch (dataType) {
    case DataType.BYTES:
      out.bytesValue = base64Bytes(val('bytes_value'));
      break;
    case DataType.BOOLEAN: {
      const x = val('boolean_value');
      if (typeof x !== 'boolean') fail(`property ${name} must be a boolean`);
      out.booleanValue = x;
      break;
    }
    case DataType.NUMBER:
      out.numberValue = int64(val('number_value'), `property ${name}`);
      break;
    case DataType.STRING: {
      const x = val('string_value');
      if (typeof x !== 'string') fail(`property ${name} must be a string`);
      out.stringValue = x;
      break;
    }
    case DataType.ENUM: {
      const x = val('enum_value');
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) fail(`property ${name} must be an enum index`);
      out.enumValue = x;
      break;
    }
    case DataType.STRUCT: {
      const x = val('struct_values');
      if (!Array.isArray(x)) fail(`property ${name} must be an array of properties`);
      out.structValues = x.map(propertyValue);
      break;
    }
    default: {
      // DataType.LAT_LONG (dataTypeValue accepts no other value).
      const x = val('lat_long_value');
      if (!isObj(x)) fail(`property ${name} must be {latitude, longitude}`);
      out.latLongValue = {
        latitude: int64(x.latitude, `latitude of ${name}`),
        longitude: int64(x.longitude, `longitude of ${name}`),
      };
    }
  }
  return out;
}

export function propertyDefinition(v: unknown): Obj {
  if (!isObj(v)) fail('property definitions must be objects');
  const def: Obj = {
    name: str(v, 'name', true),
    dataType: dataTypeValue(v.data_type),
    required: bool(v, 'required', false),
    description: str(v, 'description'),
    enumOptions: strings(v, 'enum_options'),
    structProperties: list(v, 'struct_properties').map(propertyDefinition),
  };
  // The spec's free-form `value`: kept as given (as JSON text), whatever its type.
  if (v.value !== undefined) def.valueJson = JSON.stringify(v.value);
  const exp = v.number_exponent;
  if (exp !== undefined && exp !== null) {
    if (typeof exp !== 'number' || !Number.isInteger(exp)) fail('`number_exponent` must be an integer');
    def.numberExponent = exp;
  }
  if (def.dataType === DataType.ENUM && (def.enumOptions as string[]).length === 0) fail("'enum_options' cannot be empty");
  if (def.dataType === DataType.STRUCT && (def.structProperties as Obj[]).length === 0) fail("'struct_properties' cannot be empty");
  return def;
}

/** The namespace enum value of `o[key]`, which must name GS1 (`gs1` is that enum's value). */
export function namespaceValue(o: Obj, key: string, gs1: number): number {
  const v = o[key];
  if (v === undefined || v === null || v === 'GS1' || v === 'gs1' || v === 'Gs1' || v === gs1) return gs1;
  return fail(`\`${key}\` must be GS1`);
}
