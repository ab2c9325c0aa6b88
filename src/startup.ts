/**
 * Before a start writes anything to the data directory (keys, the genesis block), every
 * fixed port it is configured to take is tried with a socket of its own and let go: a port
 * in use stops the start while the directory is still as it was, so the next start is the
 * documented first one. Port 0 (any free port) is not tried.
 */
import { createServer } from 'node:net';
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
