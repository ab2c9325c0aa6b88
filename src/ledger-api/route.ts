/**
 * Routes of the ledger gateway. Like upstream's REST API it has no authentication: the
 * caller context is empty, and errors are answered from the numbered table (errors.ts).
 */
import { defineRoute, type ApiBinding, type RouteSpec } from '../http/route.js';

export type LedgerRoute = RouteSpec<object, never>;

export const ledgerBinding: ApiBinding<object, LedgerRoute> = { enter: () => ({}) };

/** Declares a ledger route: its handler's `params`, `query` and `body` typed by its path and parsers. */
export const ledgerRoute = defineRoute<object>();
