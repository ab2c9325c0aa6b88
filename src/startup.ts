/**
 * Before a start writes anything to the data directory (keys, the genesis block), every
 * fixed port it is configured to take is tried with a socket of its own and let go: a port
 * in use stops the start while the directory is still as it was, so the next start is the
 * documented first one. Port 0 (any free port) is not tried.
 *
 * A check that needs the node's own files (a cluster member asks etcd with its node key,
 * compares its genesis block with the cluster's) comes after they are made: a start that
 * fails anywhere removes what it added (`footprint`), so every failed start, of any kind,
 * leaves the data directory as it found it.
 */
import { createServer } from 'node:net';
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { join, sep } from 'node:path';
import type { Bind, Config } from './config.js';

/** The listeners a node takes, named as the start-failure messages name them. */
export function configuredBinds(config: Config): { name: string; bind: Bind }[] {
  const out: { name: string; bind: Bind }[] = [
    { name: 'ledger', bind: config.ledgerBind },
    { name: 'node', bind: config.nodeBind },
    { name: 'data', bind: config.dataBind },
    { name: 'network', bind: config.networkBind },
  ];
  // A cluster member opens no transaction processor endpoint (every member must execute alike).
  if (config.componentBind && !config.cluster) out.push({ name: 'component', bind: config.componentBind });
  if (config.metrics.mode === 'listen') out.push({ name: 'metrics', bind: config.metrics.bind });
  return out;
}

/** Resolves with null when `host:port` can be bound now, else the error code (EADDRINUSE, …). */
export function tryBind(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    s.listen({ host, port, exclusive: true }, () => s.close(() => resolve(null)));
  });
}

/**
 * Throws `<name>: cannot listen on host:port (CODE)` for the first fixed port that cannot be
 * bound (the transaction processor endpoint's message also names its flag).
 */
export async function checkPorts(config: Config): Promise<void> {
  for (const { name, bind } of configuredBinds(config)) {
    if (bind.port === 0) continue;
    const code = await tryBind(bind.host, bind.port);
    if (code === null) continue;
    const where = `${bind.host}:${bind.port}`;
    if (name === 'component')
      throw new Error(
        `component: cannot listen on ${where} for the transaction processor endpoint (${code}) ` +
          '(move it with --component-bind / CAIRN_COMPONENT_BIND, or turn it off with "off")',
      );
    throw new Error(`${name}: cannot listen on ${where} (${code})`);
  }
}

/**
 * One sentence from an error and the errors it wraps ("committer failed to start: Error: x"
 * becomes "committer failed to start: x"), without stacks.
 */
export function reasons(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    const msg = (e instanceof Error ? e.message : String(e)).replace(/(^|: )(?:[A-Z]\w*)?Error: /g, '$1');
    if (!parts.some((p) => p.includes(msg))) parts.push(msg);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(': ');
}

/** What the data directory held before a start; `undo` removes what the start added. */
export interface Footprint {
  /** Removes every entry the start added (the data directory itself, and `madeParents`, when it made them). */
  undo(madeParents?: readonly string[]): void;
}

/**
 * Notes what is in the data directory and its `keys/`, and whether the node's files outside
 * it exist (an admin keys file or peering key named elsewhere). Only what was absent is ever
 * removed: an existing file is never touched, so a failed start cannot lose data.
 */
export function footprint(config: Config): Footprint {
  const dir = config.dataDir;
  const keys = join(dir, 'keys');
  const list = (d: string): Set<string> | null => (existsSync(d) ? new Set(readdirSync(d)) : null);
  const top = list(dir);
  const inKeys = list(keys);
  const outside = [config.adminKeysFile, config.peeringKeyFile].filter((f) => !f.startsWith(dir + sep) && !existsSync(f));
  const added = (d: string, before: Set<string>): string[] => (existsSync(d) ? readdirSync(d).filter((n) => !before.has(n)) : []);
  return {
    undo(madeParents = []): void {
      if (top === null) rmSync(dir, { recursive: true, force: true });
      else {
        for (const name of added(dir, top)) rmSync(join(dir, name), { recursive: true, force: true });
        if (inKeys !== null) for (const name of added(keys, inKeys)) rmSync(join(keys, name), { recursive: true, force: true });
      }
      for (const f of outside) rmSync(f, { force: true });
      // The parents made for the directory, innermost first, while empty.
      for (const d of [...madeParents].reverse()) {
        try {
          rmdirSync(d);
        } catch {
          break;
        }
      }
    },
  };
}
