/**
 * One process per data directory and per port: a second node on the same directory is
 * refused (exit 2, naming the directory and the holder's pid), a node on the same ports
 * fails to listen instead of sharing them, and the lock dies with its holder (kill -9).
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild, startRefused } from './helpers/child.js';
import { freePort } from './helpers/ports.js';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted, getJson } from './helpers/batches.js';

const tempDir = (t: Test): string => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-lock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

t.test('a second process on the same data directory exits 2 naming the directory and the holder', async (t) => {
  const dir = tempDir(t);
  const first = await startChild(dir);
  t.teardown(() => first.kill9());
  const second = await startRefused(dir);
  t.equal(second.code, 2, `exit code (log: ${second.log})`);
  t.match(second.log, dir, 'the message names the directory');
  t.match(second.log, `pid ${first.pid}`, 'the message names the holder');
  // Same directory AND the same ports: still the lock that refuses, before any listen.
  const same = await startRefused(dir, {
    CAIRN_LEDGER_BIND: `127.0.0.1:${first.ports.ledger}`,
    CAIRN_NODE_BIND: `127.0.0.1:${first.ports.node}`,
    CAIRN_DATA_BIND: `127.0.0.1:${first.ports.data}`,
  });
  t.equal(same.code, 2);
  const status = await getJson(`${first.ledgerUrl}/blocks`);
  t.equal(status.status, 200, 'the first node still serves');
});

t.test('a second process on the same ports fails to listen instead of sharing the port', async (t) => {
  const first = await startChild(tempDir(t), { CAIRN_LEDGER_BIND: `127.0.0.1:${await freePort()}` });
  t.teardown(() => first.kill9());
  const second = await startRefused(tempDir(t), { CAIRN_LEDGER_BIND: `127.0.0.1:${first.ports.ledger}` });
  t.not(second.code, 0, `refused (log: ${second.log})`);
  t.notMatch(second.log, /ledger gateway \(C\) on/, 'never served');
  t.match(second.log, `cannot listen on 127.0.0.1:${first.ports.ledger}`);
});

t.test('in one process, a second node on a data directory in use is refused too', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  await t.rejects(startTestNode({}, n.dataDir), {
    name: 'StartupError',
    exitCode: 2,
    message: new RegExp(`in use by another process \\(pid ${process.pid}\\)`),
  });
});

t.test('after kill -9 of the holder, a restart on the directory works and keeps the data', async (t) => {
  const dir = tempDir(t);
  const first = await startChild(dir);
  const signer = newSigner();
  const b = intkeyBatch(signer, [['set', 'lockkey', 7]]);
  t.equal((await postBatches(first.ledgerUrl, batchList(b))).status, 202);
  await waitCommitted(first.ledgerUrl, [b.id], 30);
  await first.kill9();
  const again = await startChild(dir);
  t.teardown(() => again.kill9());
  const st = await getJson(`${again.ledgerUrl}/batch_statuses?id=${b.id}`);
  t.equal(st.json.data[0].status, 'COMMITTED');
  // And the restarted node holds the lock in turn.
  const refused = await startRefused(dir);
  t.equal(refused.code, 2);
  t.match(refused.log, `pid ${again.pid}`);
});
