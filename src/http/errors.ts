/**
 * Error catalogs, as fastify keeps its errors: each error an interface answers is defined
 * once, in its interface's catalog (src/ledger-api/errors.ts, src/node-api/errors.ts,
 * src/data-api/errors.ts, src/circuits/errors.ts, and HTTP_ERRORS below for what the server
 * itself answers on every interface), with its HTTP status, a title, a message template and
 * what it mirrors upstream; handlers construct it by name (`nodeErrors.roleNotFound()`,
 * `dataErrors.orgNotFound({ id })`) and throw it. The server turns the ApiError into the
 * interface's own error body (ServerOptions.errorReply); so this is the one module that
 * constructs ApiError (scripts/lint-src.mjs refuses `new ApiError(` anywhere else), and the
 * error tables in docs/errors.md are checked against the catalogs (test/error-catalog.test.ts).
 *
 * A template names its values `{name}`; the constructor's parameter object must carry each
 * name (a missing or misspelt one is a type error), and the values are put in as given:
 * truncating or quoting a client's text stays at the call site, where the value is known.
 */
import { ApiError } from './api-error.js';

/** One error of a catalog. */
export interface ErrorDef {
  /** The reply's HTTP status. */
  readonly status: number;
  /** A short headline: on the wire for the ledger gateway (`error.title`), in the docs for all. */
  readonly title: string;
  /** The message; `{name}` is replaced by the parameter `name`. No other braces. */
  readonly message: string;
  /** The upstream error it mirrors (its class or code upstream), or null: this node's own. */
  readonly upstream: string | null;
  /** The interface's own wire code (the ledger gateway's numbered table), if its body has one. */
  readonly code?: number;
}

/** The `{name}` placeholders of a template, as a union of names. */
type Placeholders<S extends string> = S extends `${string}{${infer P}}${infer Rest}` ? P | Placeholders<Rest> : never;

/** The parameters a template needs. */
export type ParamsOf<S extends string> = { readonly [K in Placeholders<S>]: string | number };

/** The constructor of one error: its parameters (none when its message has no placeholder) and extra reply headers. */
export type MakeError<D extends ErrorDef> = [Placeholders<D['message']>] extends [never]
  ? (params?: Record<string, never>, headers?: Record<string, string>) => ApiError
  : (params: ParamsOf<D['message']>, headers?: Record<string, string>) => ApiError;

/** A catalog: one constructor per error, by name. */
export type Catalog<T extends Record<string, ErrorDef>> = { readonly [K in keyof T]: MakeError<T[K]> };

const PLACEHOLDER = /\{(\w+)\}/g;

/** The message of `def` with its placeholders filled (in one pass: a value's own braces stay as they are). */
export function fill(template: string, values: Readonly<Record<string, string | number>> | undefined): string {
  if (values === undefined) return template;
  return template.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(values, name) ? String(values[name]) : whole));
}

/** The error `def` describes, with `params` filled in. */
export function errorOf(def: ErrorDef, params?: Readonly<Record<string, string | number>>, headers?: Record<string, string>): ApiError {
  return new ApiError(def.status, fill(def.message, params), def.code, headers);
}

/**
 * The error `def` describes with a message built by its caller: for a catalog whose
 * upstream appends free text to a fixed message (the ledger gateway's `additional_info`).
 */
export function errorWithMessage(def: ErrorDef, message: string, headers?: Record<string, string>): ApiError {
  return new ApiError(def.status, message, def.code, headers);
}

/** A catalog's constructors, one per definition of `defs`. */
export function catalog<const T extends Record<string, ErrorDef>>(defs: T): Catalog<T> {
  const out: Record<string, (params?: Readonly<Record<string, string | number>>, headers?: Record<string, string>) => ApiError> = {};
  for (const [name, def] of Object.entries(defs)) out[name] = (params, headers) => errorOf(def, params, headers);
  return out as Catalog<T>;
}

/**
 * What the server answers on every interface, before or around a route's handler (in the
 * interface's own error shape). Code 18 on the read-only and storage refusals is the ledger
 * gateway's "Validator Disconnected" (the node cannot serve the request now); the other
 * interfaces' bodies carry no code. The titles are the ledger gateway's (the other
 * interfaces' bodies carry none): by HTTP status, 'Error' where it has no title for one
 * (414, 431).
 */
export const HTTP_ERRORS = {
  noResource: { status: 404, title: 'Not Found', message: 'No resource at {url}', upstream: null },
  methodNotAllowed: { status: 405, title: 'Method Not Allowed', message: 'Method {method} is not allowed on {url}', upstream: null },
  bodyTooLarge: { status: 413, title: 'Request Entity Too Large', message: 'Request body exceeds {max} bytes', upstream: null },
  targetTooLong: { status: 414, title: 'Error', message: 'The request target exceeds {max} bytes', upstream: null },
  headersTooLarge: { status: 431, title: 'Error', message: 'The request headers exceed {max} bytes', upstream: null },
  internal: { status: 500, title: 'Internal Server Error', message: 'Internal server error', upstream: null },
  bodyBudgetFull: {
    status: 503,
    title: 'Service Unavailable',
    message: 'The node is receiving too many request bodies at once; try again later',
    upstream: null,
  },
  readOnly: { status: 503, title: 'Service Unavailable', message: '{reason}', upstream: null, code: 18 },
  storageFault: { status: 503, title: 'Service Unavailable', message: '{reason}', upstream: null, code: 18 },
} as const satisfies Record<string, ErrorDef>;

export const httpErrors = catalog(HTTP_ERRORS);
