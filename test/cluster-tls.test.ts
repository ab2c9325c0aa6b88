/**
 * A cluster whose etcd speaks TLS and asks for client certificates (how etcd runs anywhere
 * but loopback): cairn cluster init and a member reach it with --cluster-etcd-ca/-cert/-key,
 * and nothing reaches it without a client certificate.
 */
import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batchList, intkeyBatch, newSigner, postBatches, waitCommitted } from './helpers/batches.js';
import { startChild, startRefused } from './helpers/child.js';
import { cairnCluster, stopOrKill } from './helpers/cluster.js';
import { freePorts } from './helpers/ports.js';
import { killOnExit, running, startDeadline, startTook, stopChild } from './helpers/procs.js';

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
function certificates(dir: string): { ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string } {
  const f = (n: string): string => join(dir, n);
  const ssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=cairn test CA', '-keyout', f('ca.key'), '-out', f('ca.pem'));
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n');
  writeFileSync(f('client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const who of ['server', 'client']) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${who}`, '-keyout', f(`${who}.key`), '-out', f(`${who}.csr`));
    ssl(
      'x509',
      '-req',
      '-in',
      f(`${who}.csr`),
      '-CA',
      f('ca.pem'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      f(`${who}.ext`),
      '-out',
      f(`${who}.pem`),
    );
  }
  return { ca: f('ca.pem'), serverCert: f('server.pem'), serverKey: f('server.key'), clientCert: f('client.pem'), clientKey: f('client.key') };
}

t.test('etcd over TLS with client certificates', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const c = certificates(dir);
  const [clientPort, peerPort] = await freePorts(2);
  const url = `https://127.0.0.1:${clientPort}`;
  const etcd = spawn(
    'etcd',
    [
      '--name=tls1',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=tls1=http://127.0.0.1:${peerPort}`,
      `--cert-file=${c.serverCert}`,
      `--key-file=${c.serverKey}`,
      `--trusted-ca-file=${c.ca}`,
      '--client-cert-auth',
    ],
    { stdio: 'ignore' },
  );
  killOnExit(etcd);
  t.teardown(() => stopChild(etcd, 0, 'SIGKILL'));
  const tls = ['--cluster-etcd-ca', c.ca, '--cluster-etcd-cert', c.clientCert, '--cluster-etcd-key', c.clientKey];
  const chainKey = join(dir, 'chain.key');
  // etcd takes a moment to listen: init is tried until it answers, within an etcd start's deadline.
  const started = Date.now();
  const deadline = started + startDeadline('etcd', 30_000);
  let init = await cairnCluster(['init', '--etcd', url, '--chain-key', chainKey, ...tls]);
  while (init.code !== 0 && Date.now() < deadline && running(etcd)) {
    await new Promise((r) => setTimeout(r, 100));
    init = await cairnCluster(['init', '--etcd', url, '--chain-key', chainKey, ...tls]);
  }
  t.equal(init.code, 0, init.log);
  if (init.code === 0) startTook('etcd', Date.now() - started);

  // The CA alone is a usage error, found before etcd is asked (docs/cli.md: exit 2).
  const noCert = await cairnCluster(['status', '--etcd', url, '--cluster-etcd-ca', c.ca]);
  t.equal(noCert.code, 2, 'without a client certificate etcd is not asked: a usage error');
  t.match(noCert.log, /needs all of --cluster-etcd-ca, --cluster-etcd-cert and --cluster-etcd-key/);
  const plain = await cairnCluster(['status', '--etcd', url.replace('https:', 'http:')]);
  t.equal(plain.code, 1, 'nor in plain text');

  const env = {
    CAIRN_CLUSTER_ETCD: url,
    CAIRN_CHAIN_KEY: chainKey,
    CAIRN_CLUSTER_ETCD_CA: c.ca,
    CAIRN_CLUSTER_ETCD_CERT: c.clientCert,
    CAIRN_CLUSTER_ETCD_KEY: c.clientKey,
  };
  const half = await startRefused(join(dir, 'half'), { CAIRN_CLUSTER_ETCD: url, CAIRN_CHAIN_KEY: chainKey, CAIRN_CLUSTER_ETCD_CA: c.ca });
  t.equal(half.code, 2, 'a TLS setting without the two others is a configuration error');
  t.match(half.log, /all three/);
  const node = await startChild(join(dir, 'n0'), env);
  t.teardown(() => stopOrKill(node));
  const b = intkeyBatch(newSigner(), [['set', 'tls', 1]]);
  t.equal((await postBatches(node.ledgerUrl, batchList(b))).status, 202);
  t.equal((await waitCommitted(node.ledgerUrl, [b.id], 20))[0]?.status, 'COMMITTED', 'a batch commits through etcd over TLS');
});
