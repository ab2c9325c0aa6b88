/**
 * What `cairn bench` prints and writes: the end summary, the progress lines, a markdown table
 * (for a CI comment) and a self-contained HTML page whose charts are inline SVG drawn here
 * (no script, no network: it opens anywhere, under any Content Security Policy).
 */
import type { Latency, RunStats, Tick } from './run-stats.js';
import type { BenchOptions } from './options.js';
import type { NodeStages } from './node-stages.js';

/** What a run of `cairn bench` reports (the JSON report; the text, Markdown and HTML ones are made from it). */
export interface BenchResult extends RunStats {
  tool: 'cairn bench';
  startedAt: string;
  targets: string[];
  settings: Omit<BenchOptions, 'urls' | 'json' | 'markdown' | 'html' | 'baseline' | 'quiet'>;
  generatorCapacityBatchesPerSec: number;
  generatorWorkers: number;
  /** The node's own stage histograms over the run (src/bench/node-stages.ts); null when its /metrics is off. */
  nodeStages: NodeStages | null;
}

const n0 = (x: number): string => Math.round(x).toLocaleString('en-US');
const n1 = (x: number): string => (Math.round(x * 10) / 10).toLocaleString('en-US');
const lat = (l: Latency): string => `p50 ${n1(l.p50)}  p99 ${n1(l.p99)}  max ${n1(l.max)}`;

/** The node's stages beside the client's latencies: where a batch waited. */
export function stageLines(ns: NodeStages | null | undefined): string[] {
  if (!ns) return ['  node stages: not read (the node serves no /metrics: start it with --metrics on)'];
  const lines = ['  node stages (its /metrics over the run; p50 / p99 ms, from the buckets):'];
  for (const s of ns.stages) lines.push(`    ${s.stage.padEnd(28)} ${n1(s.p50Ms).padStart(8)} / ${n1(s.p99Ms).padEnd(8)} (${n0(s.count)})`);
  if (ns.eventLoopMaxMs !== null) lines.push(`    ${'HTTP thread event loop, max'.padEnd(28)} ${n1(ns.eventLoopMaxMs).padStart(8)} ms`);
  return lines;
}

export function progressLine(t: Tick): string {
  return (
    `${t.t.toFixed(0).padStart(4)} s  offered ${n0(t.offered)}/s  achieved ${n0(t.achieved)}/s  committed ${n0(t.committed)}/s  ` +
    `pending ${n0(t.pending)}  429 ${n0(t.http429)}  errors ${n0(t.errors)}  submit p50/p99 ${n1(t.submitP50Ms)}/${n1(t.submitP99Ms)} ms  ` +
    `commit p50/p99 ${n1(t.commitP50Ms)}/${n1(t.commitP99Ms)} ms`
  );
}

export function describeSchedule(r: BenchResult): string {
  const s = r.settings;
  const what = s.payloads ? `batch lists from ${s.payloads}` : `intkey batches of ${s.txns} txn${s.txns === 1 ? '' : 's'}`;
  const size =
    s.batches > 0
      ? `${n0(s.batches)} ${what}`
      : `${what} for ${s.rates.length > 1 ? `${s.rates.length} steps of ${s.stepMs / 1000} s` : `${s.durationMs / 1000} s`}`;
  const loop = s.rates.length
    ? `open loop at ${s.rates.join(', ')} batches/s (up to ${s.connections} in flight)`
    : `closed loop, ${s.connections} connections`;
  return `${size} to ${r.targets.join(', ')}: ${loop}`;
}

export function summary(r: BenchResult): string {
  const lines = [
    `cairn bench: ${describeSchedule(r)}`,
    r.generatorWorkers === 0
      ? '  generator:   pre-built batch lists, read before the clock (no signing)'
      : `  generator:   ${n0(r.generatorCapacityBatchesPerSec)} batches/s signed ahead of the clock (${r.generatorWorkers} worker threads), ` +
        `${n1(r.generatorCapacityBatchesPerSec / Math.max(r.committedBatchesPerSec, 1e-9))}× the committed rate`,
    `  rate:        offered ${n1(r.offeredRate)}/s, achieved ${n1(r.achievedRate)}/s (accepted with 202)`,
    `  committed:   ${n0(r.committed)} batches, ${n1(r.committedBatchesPerSec)} batches/s, ${n1(r.committedTxnsPerSec)} txns/s over ${n1(r.elapsedSeconds)} s`,
    `  submit ms:   ${lat(r.submitLatencyMs)}`,
    `  commit ms:   ${lat(r.commitLatencyMs)}`,
    `  http 429:    ${n0(r.http429)}   invalid: ${n0(r.invalid)}   errors: ${n0(r.errors)}   not committed in time: ${n0(r.uncommitted)}`,
  ];
  for (const s of r.steps)
    lines.push(
      `  step ${s.rate}/s: offered ${n1(s.offeredRate)}/s, achieved ${n1(s.achievedRate)}/s, committed ${n1(s.committedBatchesPerSec)}/s, ` +
        `submit ${lat(s.submitLatencyMs)} ms, commit ${lat(s.commitLatencyMs)} ms`,
    );
  lines.push(...stageLines(r.nodeStages));
  const cl = r.clientEventLoopMs;
  lines.push(`  client:      event loop p99 ${n1(cl.p99)} ms, max ${n1(cl.max)} ms (the bench's own thread)`);
  if (cl.max >= 50) lines.push(`  warning: the bench's own thread was held up to ${n0(cl.max)} ms: part of the latencies above is the client's`);
  for (const e of r.errorSamples) lines.push(`  error: ${e}`);
  if (r.generatorStalls > 0)
    lines.push(`  warning: the sender waited for the generator ${n0(r.generatorStalls)} times: the generator limited this run`);
  return `${lines.join('\n')}\n`;
}

export function markdown(r: BenchResult & { runs?: BenchResult[] }): string {
  const rows: Array<[string, string]> = [
    ['committed batches/s', n1(r.committedBatchesPerSec)],
    ['committed txns/s', n1(r.committedTxnsPerSec)],
    ['offered rate (batches/s)', n1(r.offeredRate)],
    ['achieved rate (batches/s)', n1(r.achievedRate)],
    ['submit latency p50 / p99 / max (ms)', `${n1(r.submitLatencyMs.p50)} / ${n1(r.submitLatencyMs.p99)} / ${n1(r.submitLatencyMs.max)}`],
    ['commit latency p50 / p99 / max (ms)', `${n1(r.commitLatencyMs.p50)} / ${n1(r.commitLatencyMs.p99)} / ${n1(r.commitLatencyMs.max)}`],
    ['HTTP 429', n0(r.http429)],
    ['invalid', n0(r.invalid)],
    ['errors', n0(r.errors)],
    ['generator capacity (batches/s)', n0(r.generatorCapacityBatchesPerSec)],
  ];
  let md = `### cairn bench\n\n${describeSchedule(r)}\n\n| metric | value |\n| --- | ---: |\n${rows.map(([k, v]) => `| ${k} | ${v} |`).join('\n')}\n`;
  if (r.steps.length > 0) {
    md +=
      '\n| step (batches/s) | offered | achieved | committed | submit p99 (ms) | commit p99 (ms) |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n';
    for (const s of r.steps)
      md += `| ${s.rate} | ${n1(s.offeredRate)} | ${n1(s.achievedRate)} | ${n1(s.committedBatchesPerSec)} | ${n1(s.submitLatencyMs.p99)} | ${n1(s.commitLatencyMs.p99)} |\n`;
  }
  if (r.runs && r.runs.length > 1) md += `\nRuns (committed batches/s): ${r.runs.map((x) => n1(x.committedBatchesPerSec)).join(', ')}\n`;
  return md;
}

const esc = (s: string): string => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);

interface Series {
  name: string;
  color: string;
  values: number[];
}

/** A line chart as inline SVG: x is seconds since the start, one polyline per series. */
export function chart(title: string, unit: string, xs: number[], series: Series[]): string {
  const w = 640;
  const h = 240;
  const left = 56;
  const bottom = 28;
  const top = 12;
  const right = 12;
  const xmax = Math.max(1, ...xs);
  const ymax = Math.max(1, ...series.flatMap((s) => s.values)) * 1.1;
  const px = (x: number): number => left + (x / xmax) * (w - left - right);
  const py = (y: number): number => h - bottom - (y / ymax) * (h - top - bottom);
  const grid = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => {
      const y = py(ymax * f);
      return `<line x1="${left}" y1="${y}" x2="${w - right}" y2="${y}" stroke="#ddd"/><text x="${left - 6}" y="${y + 4}" text-anchor="end">${n1(ymax * f)}</text>`;
    })
    .join('');
  const lines = series
    .map((s) => {
      const pts = s.values.map((v, i) => `${px(xs[i] ?? 0).toFixed(1)},${py(v).toFixed(1)}`).join(' ');
      return `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts}"><title>${esc(s.name)}</title></polyline>`;
    })
    .join('');
  const legend = series.map((s) => `<span class="key"><i style="background:${s.color}"></i>${esc(s.name)}</span>`).join(' ');
  return (
    `<figure><figcaption>${esc(title)} <small>(${esc(unit)})</small></figcaption>` +
    `<svg viewBox="0 0 ${w} ${h}" role="img" aria-label="${esc(title)}">${grid}` +
    `<line x1="${left}" y1="${h - bottom}" x2="${w - right}" y2="${h - bottom}" stroke="#888"/>` +
    `<text x="${w - right}" y="${h - 6}" text-anchor="end">${n1(xmax)} s</text><text x="${left}" y="${h - 6}">0 s</text>${lines}</svg>` +
    `<div class="legend">${legend}</div></figure>`
  );
}

export function html(r: BenchResult): string {
  const xs = r.timeline.map((t) => t.t);
  const pick = (f: (t: Tick) => number): number[] => r.timeline.map(f);
  const figures: Array<[string, string]> = [
    ['committed batches/s', n1(r.committedBatchesPerSec)],
    ['offered / achieved rate', `${n1(r.offeredRate)} / ${n1(r.achievedRate)}`],
    ['submit latency p50 / p99 / max', `${n1(r.submitLatencyMs.p50)} / ${n1(r.submitLatencyMs.p99)} / ${n1(r.submitLatencyMs.max)} ms`],
    ['commit latency p50 / p99 / max', `${n1(r.commitLatencyMs.p50)} / ${n1(r.commitLatencyMs.p99)} / ${n1(r.commitLatencyMs.max)} ms`],
    ['HTTP 429 / invalid / errors', `${n0(r.http429)} / ${n0(r.invalid)} / ${n0(r.errors)}`],
    ['generator capacity', `${n0(r.generatorCapacityBatchesPerSec)} batches/s`],
  ];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>cairn bench report</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1340px}
h1{font-size:20px;margin:0 0 4px} p.what{color:#555;margin:0 0 16px}
table{border-collapse:collapse;margin-bottom:16px} td{padding:3px 12px 3px 0;border-bottom:1px solid #eee} td.v{text-align:right;font-variant-numeric:tabular-nums;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:16px} figure{margin:0;border:1px solid #e3e3e3;border-radius:6px;padding:8px;width:640px}
figcaption{font-weight:600;margin-bottom:4px} svg{width:100%;height:auto;font-size:11px;fill:#666}
.legend{margin-top:4px} .key{margin-right:12px;white-space:nowrap} .key i{display:inline-block;width:14px;height:3px;margin:0 4px 3px 0;vertical-align:middle}
</style></head><body>
<h1>cairn bench</h1>
<p class="what">${esc(describeSchedule(r))} · ${esc(r.startedAt)}</p>
<table>${figures.map(([k, v]) => `<tr><td>${esc(k)}</td><td class="v">${esc(v)}</td></tr>`).join('')}</table>
<div class="charts">
${chart('Throughput over time', 'batches/s', xs, [
  { name: 'offered', color: '#9aa5b1', values: pick((t) => t.offered) },
  { name: 'achieved (202)', color: '#1f77b4', values: pick((t) => t.achieved) },
  { name: 'committed', color: '#2ca02c', values: pick((t) => t.committed) },
])}
${chart('Latency over time', 'ms', xs, [
  { name: 'submit p50', color: '#aec7e8', values: pick((t) => t.submitP50Ms) },
  { name: 'submit p99', color: '#1f77b4', values: pick((t) => t.submitP99Ms) },
  { name: 'commit p50', color: '#ffbb78', values: pick((t) => t.commitP50Ms) },
  { name: 'commit p99', color: '#d62728', values: pick((t) => t.commitP99Ms) },
])}
${chart('Pending batches and back-pressure', 'count', xs, [
  { name: 'pending (accepted, not yet committed)', color: '#9467bd', values: pick((t) => t.pending) },
  { name: 'HTTP 429 so far', color: '#ff7f0e', values: pick((t) => t.http429) },
  { name: 'errors so far', color: '#d62728', values: pick((t) => t.errors) },
])}
</div>
</body></html>
`;
}
