/**
 * A cluster member's block lingers as settings, in process: the flags and variables and
 * their refusals (src/config/cluster.ts), the defaults for what is not set and the rule that
 * the close age stays below the longest linger (src/cluster/block-cutter.ts), which a member
 * checks before it reaches etcd (src/cluster/member.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig, ConfigError } from '../src/config.js';
import { BLOCK_LINGER, blockLinger } from '../src/cluster/block-cutter.js';
import { ClusterMember } from '../src/cluster/member.js';
import { StartupError } from '../src/store/lock.js';
import { newSigner } from './helpers/batches.js';

const env = { CAIRN_CLUSTER_ETCD: 'http://127.0.0.1:2379', CAIRN_CHAIN_KEY: '/k' };

t.test('the lingers: unset takes the cutter defaults; flags and variables; 0 to 10000 ms', async (t) => {
  t.same(loadConfig([], env).cluster?.linger, {}, 'none set');
  t.same(BLOCK_LINGER, { quietMs: 40, maxMs: 100, closeAgeMs: 60 }, "today's defaults");
  t.same(blockLinger(undefined), BLOCK_LINGER);
  const set = loadConfig(['--cluster-cut-quiet-ms', '5', '--cluster-cut-max-ms=200'], { ...env, CAIRN_CLUSTER_CLOSE_AGE_MS: '150' });
  t.same(set.cluster?.linger, { quietMs: 5, maxMs: 200, closeAgeMs: 150 }, 'the flags and the variable');
  t.same(loadConfig([], { ...env, CAIRN_CLUSTER_CUT_QUIET_MS: '0' }).cluster?.linger, { quietMs: 0 }, 'a quiet time of 0');
  t.same(blockLinger({ quietMs: 1 }), { quietMs: 1, maxMs: 100, closeAgeMs: 60 }, 'the defaults for the rest');
  const refused: Array<[string, string, RegExp]> = [
    ['CAIRN_CLUSTER_CUT_QUIET_MS', '10001', /cluster cut quiet: expected at most 10000/],
    ['CAIRN_CLUSTER_CUT_QUIET_MS', '4.5', /cluster cut quiet/],
    ['CAIRN_CLUSTER_CUT_MAX_MS', '0', /cluster cut max: expected an integer >= 1/],
    ['CAIRN_CLUSTER_CLOSE_AGE_MS', '-1', /cluster close age/],
  ];
  for (const [k, v, re] of refused) t.throws(() => loadConfig([], { ...env, [k]: v }), re, `refused: ${k}=${v}`);
  t.ok(
    (() => {
      try {
        loadConfig([], { ...env, CAIRN_CLUSTER_CUT_MAX_MS: 'x' });
      } catch (err) {
        return err instanceof ConfigError;
      }
      return false;
    })(),
    'a ConfigError',
  );
});

t.test('the close age must stay below the longest linger: a member refuses to start, before it reaches etcd', async (t) => {
  t.throws(() => blockLinger({ closeAgeMs: 100 }), /--cluster-close-age-ms \(100\) must be below --cluster-cut-max-ms \(100\)/);
  t.throws(() => blockLinger({ maxMs: 60 }), /must be below/, 'a longest linger at the default close age');
  t.same(blockLinger({ maxMs: 61 }).maxMs, 61);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-linger-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const keyFile = join(dir, 'chain.priv');
  // The file must exist; neither it nor etcd (none listens there) is read before the refusal.
  writeFileSync(keyFile, 'not read\n');
  const join_ = ClusterMember.join(
    { etcd: { endpoints: ['http://127.0.0.1:1'] }, chainKeyFile: keyFile, nodeId: 'n', linger: { closeAgeMs: 500 } },
    newSigner(),
  );
  await t.rejects(join_, StartupError);
  await t.rejects(join_, /--cluster-close-age-ms \(500\) must be below --cluster-cut-max-ms \(100\)/);
});
