/**
 * The cluster benchmark's core layout (bench/lib/pin.ts): which cores each node, etcd member
 * and the load generator get for PIN_CORES=k, the refusal when they do not fit, and a child
 * started pinned really runs on its cores (Linux: /proc/<pid>/status).
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pinLayout, pinned, pinSelf } from '../bench/lib/pin.js';
import { etcdAvailable, startEtcdCluster } from './helpers/etcd.js';

const allowed = (pid: number): string | undefined => /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];

t.test('the layout on 16 cores', async (t) => {
  t.same(pinLayout(2, 16).describe(), { n0: '0-1', n1: '2-3', n2: '4-5', single: '0-1', etcd: '6,7,8', bench: '9-15' });
  t.same(pinLayout(1, 16).describe(), { n0: '0', n1: '1', n2: '2', single: '0', etcd: '3,4,5', bench: '6-15' });
  const four = pinLayout(4, 16);
  t.equal(four.bench, '15', 'the generator keeps one core');
  t.equal(four.etcd(2), '14');
});

t.test('a layout that does not fit is refused with the count it needs', async (t) => {
  t.throws(() => pinLayout(5, 16), /PIN_CORES=5 needs 19 cores .* this machine has 16/);
  t.throws(() => pinLayout(1, 6), /needs 7 cores/);
  t.throws(() => pinLayout(0, 16), /PIN_CORES=0/);
});

t.test('pinned() prefixes taskset, or leaves the command alone', async (t) => {
  t.same(pinned(undefined, 'node', ['a']), ['node', ['a']]);
  t.same(pinned('2-3', 'node', ['a', 'b']), ['taskset', ['-c', '2-3', 'node', 'a', 'b']]);
});

t.test('a child started pinned runs on its core; pinSelf pins this process', async (t) => {
  // The cores this process may use (a container's cpuset may allow only some of the machine's).
  const mine = allowed(process.pid) ?? '0';
  const last = (mine.split(/[,-]/).pop() ?? '0').trim();
  const [cmd, args] = pinned(last, process.execPath, ['-e', 'setTimeout(() => {}, 5000)']);
  const child = spawn(cmd, args, { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  await new Promise((r) => child.once('spawn', r));
  // taskset execs node: the pid is node's own once the exec is done.
  let seen: string | undefined;
  for (let i = 0; i < 100 && seen !== last; i++) {
    seen = allowed(child.pid ?? 0);
    if (seen !== last) await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(seen, last);
  pinSelf(last);
  t.equal(allowed(process.pid), last);
  pinSelf(mine);
  t.equal(allowed(process.pid), mine, 'and back to every core it had');
  t.throws(() => pinSelf('100000'), /taskset could not pin to cores 100000/, 'a core the machine lacks: a clear error');
});

t.test('the etcd launcher starts each member on the cores it is given', { skip: etcdAvailable() ? false : 'no etcd on PATH' }, async (t) => {
  const mine = allowed(process.pid) ?? '0';
  const last = (mine.split(/[,-]/).pop() ?? '0').trim();
  const e = await startEtcdCluster(1, { cpus: [last] });
  t.teardown(() => e.stop());
  t.same(e.pids().map(allowed), [last]);
});
