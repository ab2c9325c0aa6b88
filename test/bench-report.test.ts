/**
 * `cairn bench --html`: the page opens in headless Chromium with no network and no script,
 * shows the figures and three charts over time, and logs no error.
 *
 * CAIRN_BENCH_SCREENSHOT=docs/bench-report.png loads a spawned node in steps for about half a
 * minute instead and saves a screenshot of the page (how docs/bench-report.png is made).
 */
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { launchBrowser } from './helpers/browser.js';
import { startFakeLedger } from './helpers/fake-ledger.js';
import { parseBenchArgs } from '../src/bench/options.js';
import { runBench } from '../src/bench/bench.js';
import { parseScrape, quantile, stagesBetween } from '../src/bench/node-stages.js';
import { stageLines } from '../src/bench/report.js';

t.test('the HTML report in a browser', async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'cairn-bench-html-'));
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));

  const shot = process.env.CAIRN_BENCH_SCREENSHOT;
  const page = join(tmp, 'report.html');
  const fake = shot ? undefined : await startFakeLedger({ submitDelayMs: 2 });
  const target = fake ? ['--url', fake.url, '--rate', '40,80', '--step', '1500ms'] : ['--spawn', '--rate', '300,600,900,1200', '--step', '8s'];
  const io = { out: (): void => undefined, err: (): void => undefined, tty: false };
  t.equal(
    await runBench(parseBenchArgs([...target, '--connections', '32', '--html', page, '--json', join(tmp, 'r.json')]).options, io),
    0,
    'the run',
  );
  await fake?.close();

  const browser: Browser = await launchBrowser();
  t.teardown(() => browser.close());
  const p = await browser.newPage({ viewport: { width: 1340, height: 900 } });
  const problems: string[] = [];
  p.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  p.on('pageerror', (e) => problems.push(e.message));
  const requests: string[] = [];
  p.on('request', (r) => requests.push(r.url()));
  // Served over loopback HTTP (this Chromium does not open files from the temp directory).
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(readFileSync(page));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/report.html`;
  await p.goto(pageUrl);

  const report = JSON.parse(readFileSync(join(tmp, 'r.json'), 'utf8'));
  t.equal(await p.locator('figure svg').count(), 3, 'three charts');
  const lines = await p.locator('figure svg polyline').evaluateAll((els) => els.map((e) => (e.getAttribute('points') ?? '').split(' ').length));
  t.equal(lines.length, 10, 'ten series');
  t.ok(
    lines.every((n) => n === report.timeline.length),
    `each series has one point per second of the timeline (${report.timeline.length})`,
  );
  const text = await p.locator('table').innerText();
  t.match(text, new RegExp(`committed batches/s\\s+${String(report.committedBatchesPerSec).replace('.', '\\.')}`), 'the committed rate in the table');
  t.match(text, /generator capacity\s+[\d,]+ batches\/s/);
  t.same(requests, [pageUrl], 'the page loads nothing else');
  t.same(problems, [], 'no error or warning in the console');
  if (shot) {
    await p.screenshot({ path: resolve(shot), fullPage: true });
    t.pass(`screenshot saved to ${shot}`);
  }
});

t.test('node stages: quantiles from bucket differences, as histogram_quantile reads them', async (t) => {
  t.equal(quantile([], 0.5), 0, 'nothing counted');
  const cum: Array<[number, number]> = [
    [0.001, 0],
    [0.01, 50],
    [0.1, 100],
    [Number.POSITIVE_INFINITY, 100],
  ];
  t.ok(Math.abs(quantile(cum, 0.5) - 0.01) < 1e-12, 'p50 at the top of the bucket that reaches it');
  t.ok(Math.abs(quantile(cum, 0.99) - 0.0982) < 1e-9, 'p99 interpolated inside its bucket');
  t.equal(
    quantile(
      [
        [0.1, 90],
        [Number.POSITIVE_INFINITY, 100],
      ],
      0.99,
    ),
    0.1,
    'in the +Inf bucket: its lower bound',
  );
  const text = (verify: number, commit: number, lag: number): string =>
    [
      '# HELP cairn_submit_stage_seconds x',
      `cairn_submit_stage_seconds_bucket{le="0.005",stage="verify"} ${verify}`,
      `cairn_submit_stage_seconds_bucket{le="+Inf",stage="verify"} ${verify}`,
      'cairn_submit_stage_seconds_bucket{le="0.005",stage="durable"} 7',
      `cairn_batch_commit_seconds_bucket{le="0.05"} ${commit / 2}`,
      `cairn_batch_commit_seconds_bucket{le="0.1"} ${commit}`,
      `cairn_batch_commit_seconds_bucket{le="+Inf"} ${commit}`,
      'cairn_http_request_duration_seconds_bucket{interface="ledger",method="GET",route="/batches",status="200",le="+Inf"} 5',
      `cairn_nodejs_eventloop_lag_max_seconds ${lag}`,
      'cairn_batch_commit_seconds_bucket{le="0.2"} not-a-number',
    ].join('\n');
  const before = parseScrape(text(10, 20, 0.5));
  const after = parseScrape(text(14, 40, 0.012));
  const r = stagesBetween([before], [after]);
  t.same(
    r.stages.map((s) => [s.stage, s.count]),
    [
      ['received → verified', 4],
      ['acknowledged → committed', 20],
    ],
    'only the stages that moved during the run; a GET is no POST /batches',
  );
  t.equal(r.stages[1]?.p50Ms, 50, 'p50 of the 20 commits of the run, not of all 40');
  t.equal(r.eventLoopMaxMs, 2, 'the event loop delay of the second scrape (reset by the first), less the 10-ms sampling interval');
  t.equal(stagesBetween([], []).eventLoopMaxMs, null, 'no lag reported');
  t.same(stageLines(null), ['  node stages: not read (the node serves no /metrics: start it with --metrics on)']);
});
