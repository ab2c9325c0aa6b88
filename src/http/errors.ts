/**
 * Error catalogs, as fastify keeps its errors: each error an interface answers is defined
 * once, in its interface's catalog (src/ledger-api/errors.ts, src/node-api/errors.ts,
 * src/data-api/errors.ts, src/auth/errors.ts, src/circuits/errors.ts, src/scabbard/errors.ts,
 * src/http/record-errors.ts, and HTTP_ERRORS below for what the server itself answers on
 * every interface), with its HTTP status, a title, a message template and what it mirrors
 * upstream; handlers construct it by name (`nodeErrors.roleNotFound()`,
 * `dataErrors.organizationNotFound({ id })`) and throw it. The server turns the ApiError into
 * the interface's own error body (ServerOptions.errorReply); so this is the one module that
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

type Values = Readonly<Record<string, string | number>>;

/** The constructor of one error: its parameters (none when its message has no placeholder) and extra reply headers. */
export type MakeError<D extends ErrorDef, R = ApiError> = [Placeholders<D['message']>] extends [never]
  ? (params?: Record<string, never>, headers?: Record<string, string>) => R
  : (params: ParamsOf<D['message']>, headers?: Record<string, string>) => R;

/** A catalog: one constructor per error, by name. */
export type Catalog<T extends Record<string, ErrorDef>, R = ApiError> = { readonly [K in keyof T]: MakeError<T[K], R> };

const PLACEHOLDER = /\{(\w+)\}/;

/**
 * A template made into a function once: its literal parts joined with the values named
 * between them (a value's own braces are not filled again; a name without a value stays
 * as written).
 */
function compile(template: string): (values?: Values) => string {
  // With a capturing group, split gives literal, name, literal, name, ..., literal.
  const parts = template.split(PLACEHOLDER);
  if (parts.length === 1) return () => template;
  return (values) => {
    let out = parts[0] ?? '';
    for (let i = 1; i < parts.length; i += 2) {
      const name = parts[i] ?? '';
      out += values !== undefined && Object.hasOwn(values, name) ? String(values[name]) : `{${name}}`;
      out += parts[i + 1] ?? '';
    }
    return out;
  };
}

/** The message `template` with its placeholders filled. */
export function fill(template: string, values?: Values): string {
  return compile(template)(values);
}

/**
 * The error `def` describes with a message built by its caller: for a catalog whose
 * upstream appends free text to a fixed message (the ledger gateway's `additional_info`).
 */
export function errorWithMessage(def: ErrorDef, message: string, headers?: Record<string, string>): ApiError {
  return new ApiError(def.status, message, def.code, headers);
}

/** One constructor per definition of `defs`, each making what `make` makes of its definition and message. */
function constructors<T extends Record<string, ErrorDef>, R>(
  defs: T,
  make: (def: ErrorDef, message: string, headers?: Record<string, string>) => R,
): Catalog<T, R> {
  const out: Record<string, (params?: Values, headers?: Record<string, string>) => R> = {};
  for (const [name, def] of Object.entries(defs)) {
    const message = compile(def.message);
    out[name] = (params, headers) => make(def, message(params), headers);
  }
  return out as Catalog<T, R>;
}

/** A catalog's constructors, one per definition of `defs`: each makes the ApiError a handler throws. */
export function catalog<const T extends Record<string, ErrorDef>>(defs: T): Catalog<T> {
  return constructors(defs, errorWithMessage);
}

/** An error the server answers itself, as the interface's `errorReply` takes it. */
export interface Refusal {
  status: number;
  message: string;
  code?: number;
}

/**
 * Constructors of refusals, not errors: for what the server answers without a handler
 * having thrown (an unknown path, a full body budget, a request over a limit), where a
 * flood should cost no Error and its stack trace.
 */
export function refusals<const T extends Record<string, ErrorDef>>(defs: T): Catalog<T, Refusal> {
  return constructors(defs, (def, message) =>
    def.code === undefined ? { status: def.status, message } : { status: def.status, message, code: def.code },
  );
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

/** The server's answers (src/http/server.ts), made without an Error. */
export const httpRefusals = refusals(HTTP_ERRORS);
