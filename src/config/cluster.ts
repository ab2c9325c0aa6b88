/**
 * The settings of a cluster member (src/cluster): the etcd endpoints and their TLS files,
 * the chain key, the URL the other members list, the signature checks, and the pace of the
 * member's appends and blocks. Read by loadConfig (src/config.ts); null for a single node.
 * The lingers' defaults, and whether they fit together, are the cluster's
 * (src/cluster/acknowledgements.ts, src/cluster/block-cutter.ts): unset here is its default.
 */
import { resolve } from 'node:path';
import { parseEndpoints } from './endpoints.js';
import type { OPTIONS } from './options.js';
import { ConfigError, int } from './values.js';

/** The longest linger a setting may give (ms): past it, a block waits longer than a client does. */
const MAX_LINGER_MS = 10_000;

export interface ClusterConfig {
  /** etcd client URLs. */
  etcd: string[];
  chainKeyFile: string;
  /** PEM files of etcd TLS with client certificates. */
  ca: string | undefined;
  cert: string | undefined;
  key: string | undefined;
  /** The ledger gateway URL the other members and /peers show (default http://<ledger bind>). */
  advertise: string | undefined;
  /** Who checks batch signatures, when set: it must be the chain's (cairn cluster init --verify). */
  verify: 'trust' | 'all' | undefined;
  /** This member's appends start at least this many ms apart per appending member; unset: src/cluster/acknowledgements.ts's default. */
  appendSpacingMs: number | undefined;
  /**
   * The block's linger, where set (src/cluster/block-cutter.ts has the defaults and the runs
   * behind them): the opener cuts its block after `quietMs` without an envelope or `maxMs`
   * after it opened; an envelope appended while the open block is `closeAgeMs` old closes it.
   */
  linger: { quietMs?: number; maxMs?: number; closeAgeMs?: number };
}

/** A linger in ms, `min` to MAX_LINGER_MS, or undefined when unset. */
function lingerMs(v: string | undefined, what: string, min: number): number | undefined {
  if (v === undefined) return undefined;
  const ms = int(v, what, min);
  if (ms > MAX_LINGER_MS) throw new ConfigError(`${what}: expected at most ${MAX_LINGER_MS} (ms), got "${v}"`);
  return ms;
}

/** The cluster settings, or null without --cluster-etcd (flags win over the environment, as everywhere). */
export function clusterConfig(get: (key: keyof typeof OPTIONS) => string | undefined): ClusterConfig | null {
  const etcd = get('clusterEtcd');
  if (etcd === undefined) return null;
  const chainKey = get('chainKey');
  if (chainKey === undefined) throw new ConfigError('--cluster-etcd needs --chain-key FILE (CAIRN_CHAIN_KEY): the chain key cairn cluster init made');
  let endpoints: string[];
  try {
    endpoints = parseEndpoints(etcd);
  } catch (err) {
    throw new ConfigError(`cluster etcd: ${(err as Error).message}`);
  }
  const pem = (k: keyof typeof OPTIONS): string | undefined => {
    const v = get(k);
    return v === undefined ? undefined : resolve(v);
  };
  const advertise = get('clusterAdvertise');
  if (advertise !== undefined && !/^https?:\/\/[^/\s]+$/.test(advertise))
    throw new ConfigError(`cluster advertise: expected http(s)://host:port, got "${advertise}"`);
  const verify = get('verify');
  if (verify !== undefined && verify !== 'trust' && verify !== 'all') throw new ConfigError(`verify: expected trust or all, got "${verify}"`);
  const spacingText = get('clusterAppendSpacingMs');
  const spacing = spacingText === undefined ? undefined : int(spacingText, 'cluster append spacing', 0);
  if (spacing !== undefined && spacing > 1000) throw new ConfigError(`cluster append spacing: expected at most 1000 (ms), got "${spacing}"`);
  const linger: ClusterConfig['linger'] = {};
  const quiet = lingerMs(get('clusterCutQuietMs'), 'cluster cut quiet', 0);
  if (quiet !== undefined) linger.quietMs = quiet;
  const max = lingerMs(get('clusterCutMaxMs'), 'cluster cut max', 1);
  if (max !== undefined) linger.maxMs = max;
  const closeAge = lingerMs(get('clusterCloseAgeMs'), 'cluster close age', 0);
  if (closeAge !== undefined) linger.closeAgeMs = closeAge;
  const c: ClusterConfig = {
    etcd: endpoints,
    chainKeyFile: resolve(chainKey),
    ca: pem('clusterEtcdCa'),
    cert: pem('clusterEtcdCert'),
    key: pem('clusterEtcdKey'),
    advertise,
    verify,
    appendSpacingMs: spacing,
    linger,
  };
  if ((c.ca || c.cert || c.key) && !(c.ca && c.cert && c.key))
    throw new ConfigError('etcd TLS needs all three of --cluster-etcd-ca, --cluster-etcd-cert and --cluster-etcd-key');
  return c;
}
