/**
 * What a circuit's state service (service.ts) is built with: its database, its place in the
 * circuit (circuit, service, the arguments the circuit gave it), how it reaches the other
 * services of the circuit, the check of submitted bodies, and the round and back-pressure
 * sizes. The intake (intake.ts) reads the same options; kept apart so that neither module
 * imports the other's.
 */
import type { RootDatabase } from 'lmdb';
import type { ServiceArgs } from './args.js';
import type { BodyVerifier } from './checks.js';

/** How a service reaches the other services of its circuit. */
export interface ServiceTransport {
  send(toService: string, msg: Uint8Array): void;
  /** Whether the node of a peer service is connected now. */
  reachable(toService: string): boolean;
}

export interface ServiceOptions {
  db: RootDatabase;
  circuitId: string;
  serviceId: string;
  args: ServiceArgs;
  /** The node's key file: the committer thread signs the ledger's blocks with it (absent: a key of its own). */
  nodeKeyFile?: string;
  transport: ServiceTransport;
  verify: BodyVerifier;
  roundMax: number;
  queueHigh: number;
  queueLow: number;
}
