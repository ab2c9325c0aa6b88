/**
 * One way to declare a route, for the three interfaces (ledger gateway, node API with the
 * circuit and scabbard routes, data API). A route is data: method, path, the permission it
 * needs (in the interface's own terms), parsers for its query and body, the JSON schema of
 * its reply, and a handler.
 *
 * Routes are declared through `defineRoute` (the ledger gateway's `ledgerRoute`, the node
 * API's `Router.add`, the data API's `DataRouter.route`): the handler's `params` are typed
 * from the path (`/blocks/:block_id` → `params.block_id`), its `query` and `body` from the
 * route's parsers (the URLSearchParams and raw bytes when it has none). A parser reads and
 * checks what the handler would otherwise read first, and throws ApiError; the interface's
 * `enter` hook runs before it, the handler after it. Positional path parameters (read by index) and `any`
 * are refused by `npm run lint` (scripts/lint-src.mjs), and so is a handler that reads the
 * raw query or body itself.
 *
 * Order of a request: `enter` (caller, permission, version), then the route's `load` step,
 * then the `query` and `body` parsers, then the handler. `load` is for what must refuse
 * before the input is read: a lookup of what the path names (404) or a check of the
 * caller (403), so a request that is wrong twice gets the same answer as ever. What it
 * returns is the handler's `loaded` (typed), and is passed to the parsers as their second
 * argument, where the checks of the input depend on it.
 *
 * A handler is a plain function: it takes a typed request (the request snapshot, named
 * path parameters, the parsed query and body, and what the interface's `enter` hook
 * made of the caller: identity, protocol version, backend) and returns a typed answer
 * (`{status, value}`) or, for what is not JSON (redirects), a ready `Reply`. Errors are
 * thrown as `ApiError`. So handlers can be called without a server (test/handlers.test.ts),
 * and the interface supplies only what differs: its caller hook and its error shape
 * (ServerOptions.errorReply).
 *
 * Replies are written by fast-json-stringify serialisers compiled once, when the routes
 * are mounted (at start). A reply schema lists the fields a reply has; a record with
 * open-ended members (JSON metadata) says so with `additionalProperties: true` or an
 * empty schema `{}` (written with JSON.stringify). `setReplyCheck(true)` (the tests turn
 * it on) compares every serialised reply with JSON.stringify of the same value, so a
 * schema that drops or retypes a field fails the test that exercises it.
 */
import fastJson from 'fast-json-stringify';
import { recordErrorAnswer } from './record-errors.js';
import type { HttpServer, Method, Reply, Req } from './server.js';

/** A JSON schema as fast-json-stringify takes it. */
export type ReplySchema = Record<string, unknown>;

/** Any JSON: written with JSON.stringify (open-ended values, or replies that are never JSON). */
export const ANY_JSON: ReplySchema = {};

/** What a handler answers: a value its route's reply schema writes, with a status (200 by default). */
export interface Answer<T = unknown> {
  status?: number;
  value: T;
  headers?: Record<string, string>;
}

/** An answer, or a ready reply for what is not JSON (a redirect, protobuf bytes). */
export type Outcome<T = unknown> = Answer<T> | Reply;

/** `{status, value}`: the answer of a JSON route. */
export function answer<T>(value: T, status = 200, headers?: Record<string, string>): Answer<T> {
  return headers ? { status, value, headers } : { status, value };
}

/** The names of the `:name` segments of a route path, as a union of string literals. */
export type ParamName<Path extends string> = Path extends `${string}:${infer Name}/${infer Rest}`
  ? Name | ParamName<`/${Rest}`>
  : Path extends `${string}:${infer Name}`
    ? Name
    : never;

/**
 * The named path parameters of a route path: `Params<'/organization/:org_id/agent/:public_key'>`
 * is `{org_id: string; public_key: string}`. A path known only as `string` gives a plain map.
 */
export type Params<Path extends string> = string extends Path ? Record<string, string> : { [K in ParamName<Path>]: string };

/**
 * The request a handler sees: `C` is what the interface's `enter` hook adds (e.g. the
 * caller's identity), `Q` and `B` what the route's query and body parsers return, `Path`
 * the route's path (its `:name` segments are the keys of `params`).
 */
export type Request<C extends object = object, Q = URLSearchParams, B = Buffer, Path extends string = string, L = undefined> = LoadRequest<
  C,
  Path
> & {
  query: Q;
  body: B;
  /** What the route's `load` step returned (undefined when it has none). */
  loaded: L;
};

/** What a route's `load` step sees: the `enter` hook's context, the request snapshot, the named path parameters. */
export type LoadRequest<C extends object = object, Path extends string = string> = C & {
  /** The request snapshot: headers, path, raw query, raw body (links and forwarding use it). */
  req: Req;
  /** Path parameters by their names in the route's path (`/blocks/:block_id` → `block_id`). */
  params: Params<Path>;
};

/** What a handler returns. */
export type HandlerResult = Outcome | Promise<Outcome>;

/**
 * A route as a table holds it. A table holds routes of different paths and parsers, so
 * here the handler's request is the general one; `defineRoute` (below) is how a route is
 * declared, and it ties the handler's `params`, `query` and `body` to the route's own
 * path and parsers.
 */
export interface RouteSpec<C extends object = object, P = never> {
  method: Method;
  /** uWS pattern, e.g. `/blocks/:block_id`. */
  path: string;
  /** What the caller needs, in the interface's terms; checked by the interface's `enter` hook. */
  permission?: P;
  /** Looks up what the path names, or checks the caller, before the input is read; throws ApiError. */
  load?(r: LoadRequest<C>): unknown;
  /** Parses (and checks) the query, given what `load` returned; throws ApiError. Default: the URLSearchParams. */
  query?(req: Req, loaded: unknown): unknown;
  /** Parses (and checks) the body, given what `load` returned; throws ApiError. Default: the raw bytes. */
  body?(req: Req, loaded: unknown): unknown;
  /** fast-json-stringify schema of the answer's value. */
  reply: ReplySchema;
  /**
   * Method syntax (its parameter is compared both ways), so that a table can hold a
   * handler whose request is narrower: the one `defineRoute` typed from the route's parsers.
   */
  handler(r: Request<C, unknown, unknown, string, unknown>): HandlerResult;
}

/**
 * A route as declared: `Path` is the literal path, `L` what its `load` step returns
 * (undefined when it has none), `Q` and `B` what its parsers return (the raw
 * URLSearchParams and bytes when it has none), and the handler's request is typed by all
 * four. `X` holds an interface's own fields (the node API's `minVersion`). Declare `load`
 * before the parsers, so that their second argument is typed from it.
 */
export type RouteDef<C extends object, P, Path extends string, Q, B, X extends object = object, L = undefined> = X & {
  method: Method;
  path: Path;
  permission?: P;
  load?: (r: LoadRequest<C, Path>) => L | Promise<L>;
  query?: (req: Req, loaded: L) => Q;
  body?: (req: Req, loaded: L) => B;
  reply: ReplySchema;
  handler: (r: Request<C, Q, B, Path, L>) => HandlerResult;
};

/**
 * The route declarer of an interface whose hook adds `C` and whose permissions are `P`:
 * `defineRoute<C, P>()({method, path, load, query, body, reply, handler})` infers the
 * path's parameter names, the load step's and the parsers' types and checks the handler
 * against them.
 */
export function defineRoute<C extends object, P = never>(): <Path extends string, Q = URLSearchParams, B = Buffer, L = undefined>(
  def: RouteDef<C, P, Path, Q, B, object, L>,
) => RouteSpec<C, P> {
  return (def) => def;
}

/** What an interface supplies to mount its routes. */
export interface ApiBinding<C extends object, S extends RouteSpec<C, unknown>> {
  /**
   * Runs before the route's parsers and handler: authenticates and authorizes the caller
   * (throwing ApiError 401/403) and returns what the handler gets besides the request.
   */
  enter(req: Req, route: S): C | Promise<C>;
}

let checkReplies = false;

/**
 * Compare every serialised reply with JSON.stringify of the same value (order of keys
 * aside); a difference is a 500 and an error in the log. For tests: it doubles the work.
 */
export function setReplyCheck(on: boolean): void {
  checkReplies = on;
}

const compiled = new WeakMap<ReplySchema, (v: unknown) => string>();

/** The serialiser of a schema, compiled once however many routes share the schema. */
export function serializer(schema: ReplySchema): (v: unknown) => string {
  let s = compiled.get(schema);
  if (!s) {
    s = schema === ANY_JSON ? (v: unknown) => JSON.stringify(v) : (fastJson(schema) as (v: unknown) => string);
    compiled.set(schema, s);
  }
  return s;
}

/** Names of the `:name` segments of a uWS pattern, in order. */
export function paramNames(path: string): string[] {
  return path.split('/').flatMap((seg) => (seg.startsWith(':') ? [seg.slice(1)] : []));
}

const namesByPath = new Map<string, string[]>();

/** `paramNames` of a route's path, computed once per path (not on every request). */
function paramNamesOf(path: string): string[] {
  let names = namesByPath.get(path);
  if (names === undefined) {
    names = paramNames(path);
    namesByPath.set(path, names);
  }
  return names;
}

/** The named path parameters of a request, as a map without a prototype. */
function namedParams(names: string[], values: string[]): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  names.forEach((n, i) => {
    const v = values[i];
    if (v !== undefined) out[n] = v;
  });
  return out;
}

function isAnswer(o: Outcome): o is Answer {
  return Object.hasOwn(o, 'value');
}

/** Sorts object keys at every level, for an order-blind comparison. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .sort()
        .map((k) => [k, canonical(o[k])]),
    );
  }
  return v;
}

function checkReply(route: RouteSpec<object, unknown>, value: unknown, written: string): void {
  const expected = JSON.stringify(canonical(JSON.parse(JSON.stringify(value) ?? 'null')));
  const got = JSON.stringify(canonical(JSON.parse(written)));
  if (expected !== got) {
    throw new Error(
      `the reply schema of ${route.method.toUpperCase()} ${route.path} changes the reply: ${got.slice(0, 400)} instead of ${expected.slice(0, 400)}`,
    );
  }
}

/** Writes a handler's outcome as a reply, with the route's compiled serialiser. */
export function toReply(route: RouteSpec<object, unknown>, write: (v: unknown) => string, out: Outcome): Reply {
  if (!isAnswer(out)) return out;
  const body = write(out.value);
  if (checkReplies) checkReply(route, out.value, body);
  return { status: out.status ?? 200, body, headers: out.headers };
}

/** Runs a route for a request snapshot: the interface's hook, the load step, the parsers, the handler. */
export async function runRoute<C extends object, S extends RouteSpec<C, unknown>>(binding: ApiBinding<C, S>, route: S, req: Req): Promise<Outcome> {
  try {
    const ctx = await binding.enter(req, route);
    const params = namedParams(paramNamesOf(route.path), req.params);
    const loaded = route.load ? await route.load({ ...ctx, req, params }) : undefined;
    const r = {
      ...ctx,
      req,
      params,
      query: route.query ? route.query(req, loaded) : req.query,
      body: route.body ? route.body(req, loaded) : req.body,
      loaded,
    } as Request<C, unknown, unknown, string, unknown>;
    return await route.handler(r);
  } catch (err) {
    // A record store's error (not found, conflict…), from the load step, a parser or the
    // handler, is answered with its status in every interface.
    throw recordErrorAnswer(err);
  }
}

/** Registers `routes` on `server`, compiling each reply schema once, now. */
export function mount<C extends object, S extends RouteSpec<C, unknown>>(server: HttpServer, binding: ApiBinding<C, S>, routes: readonly S[]): void {
  for (const route of routes) {
    const write = serializer(route.reply);
    server.route(route.method, route.path, async (req) => toReply(route, write, await runRoute(binding, route, req)));
  }
}
