/**
 * The etcd test harness against real etcd: a three-member loopback cluster keeps taking
 * writes after its leader is killed with SIGKILL, elects another member, and takes the
 * killed member back, which then holds the write it missed. And the process harness
 * (helpers/child.ts): a node that misses its start deadline is stopped before the start
 * fails, so that its data directory is free for the next start.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3, type IPutResponse } from 'etcd3';
import { startChild } from './helpers/child.js';
import { startEtcdCluster } from './helpers/etcd.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A key as one member's own store holds it (gRPC gateway, serializable range); undefined if absent. */
async function serializableGet(clientUrl: string, key: string): Promise<{ value: string; modRevision: string } | undefined> {
  const r = await fetch(`${clientUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from(key).toString('base64'), serializable: true }),
  });
  if (!r.ok) throw new Error(`range on ${clientUrl}: HTTP ${r.status} ${await r.text()}`);
  const kv = ((await r.json()) as { kvs?: { value?: string; mod_revision: string }[] }).kvs?.[0];
  return kv && { value: Buffer.from(kv.value ?? '', 'base64').toString(), modRevision: kv.mod_revision };
}

t.test('a three-member cluster survives a SIGKILLed leader and takes it back', async (t) => {
  const cluster = await startEtcdCluster(3);
  t.teardown(() => cluster.stop());
  t.equal(new Set(cluster.endpoints).size, 3, 'three distinct client endpoints');
  t.same(
    cluster.members.map((m) => m.running && typeof m.pid === 'number'),
    [true, true, true],
    'every member runs',
  );

  const client = new Etcd3({ hosts: cluster.endpoints });
  t.teardown(() => client.close());
  const first = await client.put('cairn/a').value('one');
  t.equal(await client.get('cairn/a').string(), 'one');

  const old = await cluster.leader();
  const pid = cluster.members[old]?.pid;
  await cluster.kill(old);
  const killedAt = Date.now();
  t.equal(cluster.members[old]?.running, false, 'the leader is down');
  t.equal(cluster.members[old]?.pid, undefined);
  t.throws(() => process.kill(pid ?? 0, 0), { code: 'ESRCH' }, 'its process is gone');

  // Writes come back once the two others have elected a leader. A put that reaches a follower
  // before it notices the loss is forwarded to the dead leader and waits out etcd's request
  // timeout (about 6 s): a short deadline, then another try.
  let second: IPutResponse | undefined;
  let lastError: unknown;
  while (!second && Date.now() - killedAt < 10_000) {
    try {
      second = await client
        .put('cairn/b')
        .value('two')
        .options({ deadline: Date.now() + 2000 });
    } catch (e) {
      lastError = e;
      await sleep(100);
    }
  }
  t.ok(second, `a put succeeds within 10 s of the kill (${Date.now() - killedAt} ms; last error: ${String(lastError)})`);
  t.ok(Number(second?.header.revision) > Number(first.header.revision), 'the new write has a later revision');
  const next = await cluster.leader();
  t.not(next, old, 'another member leads');
  t.equal(cluster.members[next]?.running, true);

  await cluster.restart(old);
  t.equal(cluster.members[old]?.running, true, 'the killed member runs again');

  // A serializable read is answered from the member's own store: it has caught up. Through the
  // gateway (HTTP): a gRPC client keeps a refused address in reconnect backoff for a while.
  const url = cluster.members[old]?.clientUrl ?? '';
  const deadline = Date.now() + 10_000;
  let b = await serializableGet(url, 'cairn/b');
  while (!b && Date.now() < deadline) {
    await sleep(50);
    b = await serializableGet(url, 'cairn/b');
  }
  t.same(b, { value: 'two', modRevision: second?.header.revision }, 'the restarted member holds the write it missed');
  t.same(await serializableGet(url, 'cairn/a'), { value: 'one', modRevision: first.header.revision });
  t.equal(await client.get('cairn/b').string(), 'two', 'the client reads through the healed cluster');

  await cluster.stop();
  t.same(
    cluster.members.map((m) => m.running),
    [false, false, false],
    'stop ends every member',
  );
});

t.test('a node that misses its start deadline is stopped before the start fails', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-late-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // No node listens within 1 ms.
  const err = (await startChild(dir, {}, { deadlineMs: 1 }).then(
    (n) => n.kill9().then(() => null),
    (e: unknown) => e,
  )) as (Error & { pid?: number }) | null;
  t.match(err?.message, /^node did not start within 1 ms \(stopped\)/);
  t.type(err?.pid, 'number');
  t.throws(() => process.kill(err?.pid ?? 0, 0), { code: 'ESRCH' }, 'its process is gone');
  // Nothing holds the data directory: a node starts on it.
  const node = await startChild(dir);
  t.teardown(() => node.stop());
  t.match(node.ledgerUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
});
