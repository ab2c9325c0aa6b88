/**
 * Where the plug-ins declare themselves to the engine. A committer thread runs one
 * composition (its batch source, consensus, writer and builder put together), chosen by
 * name: the composition whose name is a key of its options (`circuit`, `sharedLog`), else
 * the node's own (`node`, compose.ts). An external executor (the component endpoint's
 * processors) is made the same way, by the executor whose name is a key of the options.
 *
 * Each plug-in module registers when it is loaded; the committer thread's entry
 * (workers/committer.ts, the top of the layers) loads them. The engine imports none of
 * them: their options and messages are declared to protocol.ts by the plug-ins themselves.
 */
import type { RootDatabase } from 'lmdb';
import type { Signer } from '../crypto/secp256k1.js';
import type { CommitterOptions, EngineToCommitter, FromCommitter, ToCommitter } from './protocol.js';
import type { ExternalExecutor } from './executor.js';
import type { Committer } from './committer.js';

/** What a composition is given in the committer thread. */
export interface ComposeContext {
  /** The ledger's environment (this thread's handle). */
  db: RootDatabase;
  /** The node's key (or, without a key file, a key of the thread's own). */
  signer: Signer;
  opts: CommitterOptions;
  post(m: FromCommitter): void;
}

/** A message the composition handles: any but the thread's own (`begin`, `shutdown`). */
export type ComposedMessage = Exclude<ToCommitter, Extract<EngineToCommitter, { type: 'begin' | 'shutdown' }>>;

/** A composed committer, as the thread runs it. */
export interface Composed {
  committer: Pick<Committer, 'init' | 'close' | 'halt' | 'fail' | 'failed'>;
  /** Environments it opened besides the ledger's (closed with it). */
  envs: RootDatabase[];
  /** A message of the HTTP thread (a plug-in's own, or the engine's enqueue and client envelopes). */
  handle(m: ComposedMessage): void;
}

export type Composition = (ctx: ComposeContext) => Composed;

/** What an executor's maker is given: its options, and where its clients' traffic and reports go. */
export type ExecutorMaker = (opts: CommitterOptions, post: (m: FromCommitter) => void) => ExternalExecutor | null;

/** The composition of a committer whose options name no other. */
export const DEFAULT_COMPOSITION = 'node';

const compositions = new Map<string, Composition>();
const executors = new Map<string, ExecutorMaker>();

/** A plug-in's composition, under its name (the key of CommitterOptions that selects it). */
export function registerComposition(name: string, compose: Composition): void {
  compositions.set(name, compose);
}

/** A plug-in's external executor, under its name (the key of CommitterOptions that enables it). */
export function registerExecutor(name: string, make: ExecutorMaker): void {
  executors.set(name, make);
}

/** True when `opts` has a value under `name`. */
function names(opts: CommitterOptions, name: string): boolean {
  return Object.entries(opts).some(([k, v]) => k === name && v !== undefined);
}

/** The composition `opts` selects: the registered one whose name is a key of it, else the default. */
export function compositionFor(opts: CommitterOptions): { name: string; compose: Composition } {
  for (const [name, compose] of compositions) if (name !== DEFAULT_COMPOSITION && names(opts, name)) return { name, compose };
  const compose = compositions.get(DEFAULT_COMPOSITION);
  if (!compose) throw new Error(`no committer composition is registered as '${DEFAULT_COMPOSITION}'`);
  return { name: DEFAULT_COMPOSITION, compose };
}

/** The external executor `opts` enables (the first registered whose name is a key of it), or null. */
export function executorFor(opts: CommitterOptions, post: (m: FromCommitter) => void): ExternalExecutor | null {
  for (const [name, make] of executors) if (names(opts, name)) return make(opts, post);
  return null;
}
