/**
 * A failed-login flood must not stall ledger acknowledgements: bcrypt and the pending-pool
 * writes share the libuv thread pool, so password checks pass one bounded gate (and a
 * per-address throttle). 32 clients loop failed logins with unknown usernames at the
 * production bcrypt cost while batches are posted to the ledger gateway.
 */
import t from 'tap';
import { startTestNode } from './helpers/node.js';
import { batchList, intkeyBatch, newSigner, postBatches } from './helpers/batches.js';

const node = await startTestNode({ CAIRN_BCRYPT_COST: '12', CAIRN_LOGIN_BACKOFF_MS: '1000' });
t.teardown(() => node.stop());
const signer = newSigner();
let seq = 0;

async function ackMs(): Promise<number> {
  const body = batchList(intkeyBatch(signer, [['set', `k${seq++}`, 1]]));
  const start = performance.now();
  const r = await postBatches(node.ledgerUrl, body);
  if (r.status !== 202) throw new Error(`batch: ${r.status} ${JSON.stringify(r.json)}`);
  return performance.now() - start;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

t.test('batch acknowledgements keep flowing under a failed-login flood', async (t) => {
  for (let i = 0; i < 3; i++) await ackMs(); // warm up
  const baseline: number[] = [];
  for (let i = 0; i < 8; i++) baseline.push(await ackMs());

  let flooding = true;
  const logins: Array<{ status: number; retryAfter: string | null }> = [];
  const client = async (c: number): Promise<void> => {
    for (let i = 0; flooding; i++) {
      const r = await fetch(`${node.nodeUrl}/biome/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: `ghost-${c}-${i}`, hashed_password: 'wrong' }),
      });
      await r.arrayBuffer();
      logins.push({ status: r.status, retryAfter: r.headers.get('retry-after') });
      // The clients share this process with the node: do not let refused ones spin the CPU.
      if (r.status !== 401) await new Promise((res) => setTimeout(res, 50));
    }
  };
  const clients = Array.from({ length: 32 }, (_, c) => client(c));
  // Let the flood fill the password queue first: until the first login is refused (the gate
  // is full), not for a fixed time, which a busy machine may not fill it in.
  for (const end = Date.now() + 30_000; Date.now() < end && !logins.some((l) => l.status === 429 || l.status === 503); )
    await new Promise((r) => setTimeout(r, 20));
  const loaded: number[] = [];
  for (let i = 0; i < 8; i++) loaded.push(await ackMs());
  flooding = false;
  await Promise.all(clients);

  const refused = logins.filter((l) => l.status === 429 || l.status === 503);
  t.ok(refused.length > 0, `logins over the limit are refused (${refused.length} of ${logins.length})`);
  t.ok(
    refused.every((l) => Number(l.retryAfter) >= 1),
    'each refusal carries Retry-After',
  );
  t.ok(
    logins.every((l) => l.status === 401 || l.status === 429 || l.status === 503),
    'no other answers',
  );
  // Generous: twenty times the unloaded median plus two seconds. Without the gate, acks
  // wait behind every queued bcrypt (about 12 s here).
  const bound = 20 * median(baseline) + 2000;
  t.ok(
    median(loaded) < bound,
    `acks under the flood: median ${median(loaded).toFixed(0)} ms (unloaded ${median(baseline).toFixed(0)} ms, bound ${bound.toFixed(0)} ms)`,
  );
});

t.test('the gate answers 503 with Retry-After when its queue is full, and failed logins from one address lock it', async (t) => {
  const n2 = await startTestNode({ CAIRN_BCRYPT_COST: '10', CAIRN_PASSWORD_QUEUE: '1', CAIRN_LOGIN_ADDRESS_FAILURES: '1000' });
  t.teardown(() => n2.stop());
  const login = (u: string): Promise<Response> =>
    fetch(`${n2.nodeUrl}/biome/login`, { method: 'POST', body: JSON.stringify({ username: u, hashed_password: 'x' }) });
  const rs = await Promise.all(Array.from({ length: 6 }, (_, i) => login(`busy-${i}`)));
  const statuses = rs.map((r) => r.status);
  t.ok(statuses.filter((s) => s === 401).length >= 2, `one running and one queued are checked (${statuses})`);
  const busy = rs.filter((r) => r.status === 503);
  t.ok(busy.length >= 1, 'the rest: 503');
  t.ok(
    busy.every((r) => Number(r.headers.get('retry-after')) >= 1),
    'with Retry-After',
  );

  const n3 = await startTestNode({ CAIRN_BCRYPT_COST: '4', CAIRN_LOGIN_ADDRESS_FAILURES: '5', CAIRN_LOGIN_BACKOFF_MS: '60000' });
  t.teardown(() => n3.stop());
  const seen: number[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await fetch(`${n3.nodeUrl}/biome/login`, { method: 'POST', body: JSON.stringify({ username: `addr-${i}`, hashed_password: 'x' }) });
    seen.push(r.status);
  }
  t.same(seen, [401, 401, 401, 401, 401, 429], 'the fifth failure from one address locks it, whatever the usernames');
});
