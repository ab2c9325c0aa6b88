/**
 * What a circuit's ledger (one scabbard service) passes between the HTTP thread (the
 * agreement, src/scabbard/agreement.ts) and its committer thread (src/scabbard/compose.ts):
 * plain data, declared to the engine's protocol as the plug-in `circuit`.
 */
/** What the committer of a circuit's ledger (one scabbard service) needs to know. */
export interface CircuitCommitterOptions {
  circuitId: string;
  serviceId: string;
  /** Whether this service coordinates (builds rounds from its intake) or verifies the coordinator's. */
  coordinator: boolean;
  /** The circuit's admin keys: the initial state of its ledger. */
  adminKeys: string[];
  /** Batches per round at most. */
  roundMax: number;
}

/** A round of a circuit: its batches as an encoded BatchList, where it goes and what it gives. */
export interface CircuitRound {
  id: string;
  height: number;
  ts: number;
  /** State root of the round it follows. */
  parentRoot: string;
  batches: Uint8Array;
}

/** A round committed elsewhere (catch-up): what it must give here. */
export interface AgreedRound {
  height: number;
  ts: number;
  batches: Uint8Array;
  root: string;
  verdicts: string;
}

/**
 * A circuit round executed by the committer, for the agreement on the HTTP thread: the
 * coordinator's round to propose, or a member's result for a proposal to vote on.
 * `follows: false`: the proposal does not follow this member's tip (or is undecodable),
 * nothing was executed; `height` is then the member's tip height.
 */
export interface RoundSummary extends CircuitRound {
  type: 'summary';
  follows: boolean;
  root: string;
  verdicts: string;
  included: string[];
  invalid: string[];
}

/** The agreement's messages to a circuit's committer. */
export type CircuitToCommitter =
  /** A circuit's accepted batches, durable in its intake (the coordinator builds rounds of them). */
  | { type: 'intake'; batches: Array<{ id: string; bytes: Uint8Array }> }
  /** A circuit member: execute the coordinator's proposed round and summarize it. */
  | { type: 'propose'; round: CircuitRound }
  /** Rounds committed elsewhere, their batches checked: re-execute and write them. */
  | { type: 'catch-up'; from: string; rounds: AgreedRound[] }
  /** The agreement's decision on a summarized round (`pauseMs`: wait before the next one). */
  | { type: 'decide'; id: string; finalize: boolean; pauseMs?: number };

/** A circuit committer's news: a round summarized for the agreement, or one given up (a catch-up replaced it). */
export type CircuitFromCommitter = RoundSummary | { type: 'dropped'; id: string };

declare module '../ledger/protocol.js' {
  interface PluginOptions {
    circuit: CircuitCommitterOptions;
  }
  interface PluginToCommitter {
    circuit: CircuitToCommitter;
  }
  interface PluginFromCommitter {
    circuit: CircuitFromCommitter;
  }
}
