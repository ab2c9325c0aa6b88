/**
 * GET /metrics: a node with metrics on, real signed batches submitted over HTTP, the
 * Prometheus text scraped over HTTP and parsed here; the counters and gauges must have
 * moved by what was submitted and committed. Also the metrics listener of its own
 * (`--metrics host:port`) and metrics off (404).
 */
import t from 'tap';
import { loadConfig, ConfigError } from '../src/config.js';
import { VERSION } from '../src/node.js';
import { StatusWaiters } from '../src/ledger/status-waiters.js';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted, getJson } from './helpers/batches.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (comments skipped, labels unescaped). */
function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] ?? ''] = (l[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1] ?? '', labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of a metric's samples whose labels include `match`. */
function value(samples: Sample[], name: string, match: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}

async function scrape(url: string): Promise<{ status: number; type: string | null; samples: Sample[] }> {
  const r = await fetch(url);
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type'), samples: r.status === 200 ? parseMetrics(text) : [] };
}

/**
 * Scrapes until `done` holds on the samples (10 s at most), and returns the last scrape. A batch
 * reads COMMITTED from the store as soon as the committer thread has written its block; the
 * counters move with the block event, which reaches the HTTP thread a moment later (under CI
 * load a scrape right after the status once read the counter before it).
 */
async function scrapeUntil(url: string, done: (samples: Sample[]) => boolean): Promise<Sample[]> {
  let samples: Sample[] = [];
  for (const end = Date.now() + 10_000; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) {
    samples = (await scrape(url)).samples;
    if (done(samples)) break;
  }
  return samples;
}

t.test('metrics on: counts follow submitted, rejected, committed and invalid batches', async (t) => {
  const tn = await startTestNode({ CAIRN_METRICS: 'on' });
  t.teardown(() => tn.stop());
  const url = `${tn.ledgerUrl}/metrics`;
  const before = await scrape(url);
  t.equal(before.status, 200);
  t.match(before.type, /^text\/plain; version=0\.0\.4/);
  const b = before.samples;

  const signer = newSigner();
  const two = [intkeyBatch(signer, [['set', 'm1', 1]]), intkeyBatch(signer, [['set', 'm2', 2]])];
  const one = intkeyBatch(signer, [['inc', 'm1', 5]]);
  // Accepted (the signature is fine) but INVALID at execution: dec of a name never set.
  const bad = intkeyBatch(signer, [['dec', 'never-set', 1]]);
  for (const body of [batchList(...two), batchList(one), batchList(bad)]) t.equal((await postBatches(tn.ledgerUrl, body)).status, 202);
  // Refused at submission: bytes that are not a BatchList (one batch by its top-level scan).
  const refused = await postBatches(tn.ledgerUrl, Buffer.from([0x0a, 0x02, 0xff, 0xff]));
  t.equal(refused.status, 400);
  const statuses = await waitCommitted(
    tn.ledgerUrl,
    [...two, one, bad].map((x) => x.id),
    30,
  );
  t.same(
    statuses.map((s: { status: string }) => s.status),
    ['COMMITTED', 'COMMITTED', 'COMMITTED', 'INVALID'],
  );
  await getJson(`${tn.ledgerUrl}/batch_statuses?id=${one.id}`);
  const head = (await getJson(`${tn.ledgerUrl}/blocks?limit=1`)).json.data[0].header;

  const a = await scrapeUntil(
    url,
    (x) => value(x, 'cairn_batches_committed_total') - value(b, 'cairn_batches_committed_total') >= 3 && value(x, 'cairn_pending_batches') === 0,
  );
  const delta = (name: string, match: Record<string, string> = {}): number => value(a, name, match) - value(b, name, match);
  t.equal(delta('cairn_batches_received_total'), 5, 'received: 4 signed batches and 1 refused');
  t.equal(delta('cairn_batches_accepted_total'), 4, 'accepted: the 4 answered 202');
  t.equal(delta('cairn_batches_rejected_total'), 1, 'rejected: 1');
  const reasons = a.filter((s) => s.name === 'cairn_batches_rejected_total' && s.value > 0).map((s) => s.labels.reason);
  t.ok(reasons.length === 1 && ['UNDECODABLE', 'INVALID'].includes(reasons[0] ?? ''), `rejected by reason (${reasons})`);
  t.equal(delta('cairn_batches_committed_total'), 3);
  t.equal(delta('cairn_batches_invalid_total'), 1);
  t.equal(value(a, 'cairn_block_height'), Number(head.block_num), 'block height is the head');
  t.ok(delta('cairn_blocks_committed_total') >= 1, 'blocks counted');
  t.equal(delta('cairn_block_build_seconds_count'), delta('cairn_blocks_committed_total'), 'one build time per block');
  t.ok(value(a, 'cairn_block_build_seconds_sum') > 0);
  // The stages of a submission: one verify and one durable time per accepted body (three
  // bodies; the refused one has neither), one commit latency per committed batch, one settle
  // time and waiter count per block event.
  t.equal(delta('cairn_submit_stage_seconds_count', { stage: 'verify' }), 3, 'verify: one per accepted body');
  t.ok(delta('cairn_submit_stage_seconds_count', { stage: 'durable' }) >= 1, 'durable: one per group write');
  t.ok(delta('cairn_submit_stage_seconds_sum', { stage: 'verify' }) > 0);
  t.equal(delta('cairn_batch_commit_seconds_count'), 3, 'acknowledged to committed: one per committed batch');
  t.ok(delta('cairn_batch_commit_seconds_sum') > 0);
  t.equal(
    delta('cairn_block_settle_seconds_count'),
    delta('cairn_block_status_waits_woken_count'),
    'one settle time and one waiter count per block event',
  );
  t.equal(delta('cairn_batch_commit_seconds_bucket', { le: '+Inf' }), 3, 'the buckets count them all');
  t.equal(value(a, 'cairn_pending_batches'), 0, 'nothing pending once all settled');
  t.equal(value(a, 'cairn_queue_limit_batches'), tn.node.ledger.queueLimit);
  t.ok(value(a, 'cairn_queue_limit_batches') > 0);
  const util = value(a, 'cairn_verify_pool_utilization');
  t.ok(util >= 0 && util <= 1, `verify pool utilization ${util}`);
  t.equal(value(a, 'cairn_lmdb_map_size_bytes', { file: 'ledger.mdb' }), 64 * 1024 ** 3);
  t.ok(value(a, 'cairn_lmdb_file_size_bytes', { file: 'ledger.mdb' }) > 0);
  t.ok(value(a, 'cairn_lmdb_file_size_bytes', { file: 'pending.mdb' }) > 0);
  t.ok(value(a, 'cairn_process_cpu_seconds_total') > 0, 'process metrics');
  t.ok(
    a.some((s) => s.name === 'cairn_nodejs_heap_size_used_bytes'),
    'node.js metrics',
  );
  // HTTP durations are labelled by route pattern and status, never by the raw URL.
  t.equal(delta('cairn_http_request_duration_seconds_count', { interface: 'ledger', method: 'POST', route: '/batches', status: '202' }), 3);
  t.equal(delta('cairn_http_request_duration_seconds_count', { interface: 'ledger', method: 'POST', route: '/batches', status: '400' }), 1);
  t.ok(value(a, 'cairn_http_request_duration_seconds_count', { route: '/batch_statuses', status: '200' }) >= 2);
  const routes = new Set(a.filter((s) => s.name.startsWith('cairn_http_request_duration_seconds')).map((s) => s.labels.route));
  t.notOk(
    [...routes].some((r) => r !== undefined && /[0-9a-f]{64}|\?/.test(r)),
    `no ids or queries in route labels: ${[...routes]}`,
  );
});

t.test('metrics on a listener of its own; the ledger port does not serve them', async (t) => {
  const tn = await startTestNode({ CAIRN_METRICS: '127.0.0.1:0' });
  t.teardown(() => tn.stop());
  const port = tn.node.metricsPort;
  t.ok(port && port > 0, 'the listener has a port');
  const own = await scrape(`http://127.0.0.1:${port}/metrics`);
  t.equal(own.status, 200);
  t.ok(value(own.samples, 'cairn_block_height') >= 0);
  t.equal(value(own.samples, 'cairn_info', { version: VERSION }), 1);
  const signer = newSigner();
  const batch = intkeyBatch(signer, [['set', 'own', 7]]);
  t.equal((await postBatches(tn.ledgerUrl, batchList(batch))).status, 202);
  t.equal((await waitCommitted(tn.ledgerUrl, [batch.id], 30))[0].status, 'COMMITTED');
  const after = await scrapeUntil(`http://127.0.0.1:${port}/metrics`, (x) => value(x, 'cairn_batches_committed_total') !== 0);
  t.equal(value(after, 'cairn_batches_committed_total'), 1, 'the committed counter follows the block');
  t.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
  const onLedger = await fetch(`${tn.ledgerUrl}/metrics`);
  t.equal(onLedger.status, 404, 'not on the ledger port');
});

t.test('metrics off (default): GET /metrics is 404 in the gateway error shape; request ids still echoed', async (t) => {
  const tn = await startTestNode();
  t.teardown(() => tn.stop());
  t.equal(tn.node.metricsPort, undefined);
  const r = await fetch(`${tn.ledgerUrl}/metrics`);
  t.equal(r.status, 404);
  t.match(await r.json(), { error: { code: Number } });
  const s = await fetch(`${tn.ledgerUrl}/status`);
  t.match(s.headers.get('x-request-id'), /^[0-9a-f]{8}-[0-9a-z]+$/, 'a request id is made');
  const given = await fetch(`${tn.ledgerUrl}/status`, { headers: { 'x-request-id': 'trace-42.a' } });
  t.equal(given.headers.get('x-request-id'), 'trace-42.a', "the client's id is echoed");
  const odd = await fetch(`${tn.ledgerUrl}/status`, { headers: { 'x-request-id': 'has spaces<>' } });
  t.not(odd.headers.get('x-request-id'), 'has spaces<>', 'an id that is not a short token is replaced');
});

t.test('--metrics takes off, on or host:port', async (t) => {
  t.same(loadConfig([]).metrics, { mode: 'off' });
  t.same(loadConfig(['--metrics', 'on']).metrics, { mode: 'on' });
  t.same(loadConfig([], { CAIRN_METRICS: '0.0.0.0:9464' }).metrics, { mode: 'listen', bind: { host: '0.0.0.0', port: 9464 } });
  for (const bad of ['loud', 'host:99999']) {
    let err: unknown;
    try {
      loadConfig(['--metrics', bad]);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof ConfigError, `--metrics ${bad} is refused`);
    t.match((err as Error).message, /metrics: expected/);
  }
});

t.test('the status waits woken per block: a settle counts the waits it completes', async (t) => {
  const w = new StatusWaiters();
  const both = w.waitFor(['a', 'b'], 10_000);
  const one = w.waitFor(['a'], 10_000);
  t.equal(w.settle('a'), 1, 'a completes the wait for a alone; the wait for a and b still waits for b');
  await one;
  t.equal(w.settle('a'), 0, 'settled again: nobody waits');
  t.equal(w.settle('b'), 1, 'b completes the other');
  await both;
  t.equal(w.settle('zz'), 0, 'an id nobody waits for');
  w.close();
});
