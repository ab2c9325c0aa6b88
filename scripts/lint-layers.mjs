#!/usr/bin/env node
/**
 * The layering of the source, run by `npm run lint` after scripts/lint-src.mjs. Every module
 * of src/ and workers/ sits on one floor of LAYERS (bottom first; docs/architecture.md draws
 * the same table) and imports only from its own floor or below. It reads every relative
 * import, `import type`, `export ... from` and dynamic `import()` (a type's `import('...')`
 * too) and reports:
 *
 * - upward imports: a module that imports from a floor above its own. Each pair of table
 *   entries (importer's, imported's) counts once; the ones in UPWARD_ALLOWED pass, and that
 *   list holds 2 at most, each with its reason (an entry for an import that is gone fails,
 *   as does one for a circle that is gone in CIRCLES_ALLOWED);
 * - circles: modules that import each other, directly or round a longer ring, type-only
 *   imports included (a circle of types still ties the files' meanings together);
 * - engine imports of a plug-in: src/ledger/** importing src/cluster, src/component,
 *   src/scabbard or src/circuits. The engine declares the interfaces (ledger/source.ts,
 *   consensus.ts, executor.ts, plugins.ts); the plug-ins implement and register them.
 *
 * Usage: `node scripts/lint-layers.mjs [root]` (default: the working directory). Prints the
 * figures (floors, modules, imports, upward imports, circles) and each finding; exits 1 when
 * a finding is not allowed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

/**
 * The floors, bottom first: each a name and the directories (ending in `/`) or files it
 * holds, relative to the root. A module belongs to the entry that names it most closely (a
 * file entry before its directory's). Keep docs/architecture.md's "Layers" table the same.
 */
export const LAYERS = [
  { floor: 'base', what: 'encodings, keys, log, protobuf', holds: ['src/codec/', 'src/crypto/', 'src/log.ts', 'src/proto/'] },
  { floor: 'config', what: 'the configuration', holds: ['src/config.ts', 'src/config/'] },
  { floor: 'storage', what: 'LMDB, stores, fault hooks', holds: ['src/store/', 'src/testing/'] },
  { floor: 'state', what: 'Merkle-Radix state', holds: ['src/state/'] },
  { floor: 'families', what: 'transaction families', holds: ['src/families/'] },
  { floor: 'engine', what: 'the ledger engine and its plug-in interfaces', holds: ['src/ledger/'] },
  { floor: 'over the engine', what: 'whole-ledger tools, HTTP plumbing', holds: ['src/maintenance/', 'src/http/'] },
  { floor: 'auth', what: 'identities, permissions', holds: ['src/auth/'] },
  { floor: 'plug-ins', what: 'a cluster member, two-phase commit', holds: ['src/cluster/', 'src/consensus/'] },
  { floor: 'interfaces', what: 'the three HTTP interfaces', holds: ['src/ledger-api/', 'src/node-api/', 'src/data-api/'] },
  { floor: 'component', what: 'the ZeroMQ component endpoint', holds: ['src/component/'] },
  { floor: 'scabbard', what: "a circuit's ledger service", holds: ['src/scabbard/'] },
  { floor: 'circuits', what: 'circuits between nodes', holds: ['src/circuits/'] },
  {
    floor: 'composition',
    what: 'the node, its start, metrics, explorer, bench',
    holds: ['src/node.ts', 'src/startup.ts', 'src/metrics.ts', 'src/explorer/', 'src/bench/', 'src/cli/args.ts'],
  },
  { floor: 'entries', what: 'commands, main, worker entries', holds: ['src/cli/', 'src/main.ts', 'workers/'] },
];

/**
 * Upward imports that pass, as `importer entry -> imported entry` (the LAYERS entries), each
 * with its reason. At most 2. `pending`: another change of the same issue removes it (the
 * entry goes with it).
 */
export const UPWARD_ALLOWED = [];

/** Circles that pass for now, as their modules sorted and joined by ` <-> `; each with its reason. */
export const CIRCLES_ALLOWED = [];

/** What the engine must not import: the plug-ins, which implement its interfaces. */
const ENGINE = 'src/ledger/';
const PLUG_INS = ['src/cluster/', 'src/component/', 'src/scabbard/', 'src/circuits/'];

const SOURCE = /\.(?:ts|mts|cts|js|mjs|cjs)$/;

/** Source files under `dir` (recursively), relative to `root` with `/` separators. */
function sources(root, dir) {
  const abs = join(root, dir);
  if (!existsSync(abs)) return [];
  const out = [];
  for (const e of readdirSync(abs, { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sources(root, p));
    else if (e.isFile() && SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out.sort();
}

/** The LAYERS entry of `file` and its floor's index, or null when no entry holds it. */
export function placeOf(file, layers = LAYERS) {
  let best = null;
  layers.forEach((l, floor) => {
    for (const h of l.holds) {
      const hit = h.endsWith('/') ? file.startsWith(h) : file === h;
      if (hit && (best === null || h.length > best.entry.length)) best = { entry: h, floor };
    }
  });
  return best;
}

/** The file a relative specifier of `from` names (its .ts source for a `.js` name), or null outside the tree. */
function resolveImport(root, from, spec, known) {
  const base = relative(root, resolve(root, dirname(from), spec))
    .split(sep)
    .join('/');
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`, `${base}/index.ts`];
  return candidates.find((c) => known.has(c)) ?? null;
}

/** Every relative import of every module: `[{ from, to }]`, one per import statement or expression. */
export function importsOf(root, files) {
  const known = new Set(files);
  const edges = [];
  for (const from of files) {
    const text = readFileSync(join(root, from), 'utf8');
    for (const f of ts.preProcessFile(text, true, true).importedFiles) {
      if (!f.fileName.startsWith('.')) continue;
      const to = resolveImport(root, from, f.fileName.replace(/\?.*$/, ''), known);
      if (to !== null && to !== from) edges.push({ from, to });
    }
  }
  return edges;
}

/** Strongly connected groups of more than one module (Tarjan), each sorted. */
export function circles(files, edges) {
  const next = new Map(files.map((f) => [f, new Set()]));
  for (const e of edges) next.get(e.from)?.add(e.to);
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const group = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) out.push(group.sort());
    }
  };
  for (const f of files) if (!idx.has(f)) visit(f);
  return out.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

/** The whole check on the tree at `root`: figures and findings. */
export function check(root, { layers = LAYERS, upwardAllowed = UPWARD_ALLOWED, circlesAllowed = CIRCLES_ALLOWED } = {}) {
  const files = [...sources(root, 'src'), ...sources(root, 'workers')];
  const edges = importsOf(root, files);
  const findings = [];
  const unplaced = files.filter((f) => placeOf(f, layers) === null);
  for (const f of unplaced) findings.push(`${f}: on no floor (add it to LAYERS in scripts/lint-layers.mjs)`);

  /** Upward pairs of entries, each with the imports that make it. */
  const upward = new Map();
  for (const e of edges) {
    const a = placeOf(e.from, layers);
    const b = placeOf(e.to, layers);
    if (a === null || b === null || b.floor <= a.floor) continue;
    const pair = `${a.entry} -> ${b.entry}`;
    if (!upward.has(pair)) upward.set(pair, []);
    const via = `${e.from} -> ${e.to}`;
    if (!upward.get(pair).includes(via)) upward.get(pair).push(via);
  }
  const allowed = new Map(upwardAllowed.map((u) => [u.pair, u.why]));
  if (upwardAllowed.length > 2) findings.push(`UPWARD_ALLOWED holds ${upwardAllowed.length} entries: 2 at most`);
  for (const [pair, via] of upward) {
    if (!allowed.has(pair))
      findings.push(`upward import ${pair} (${layers[placeOf(via[0].split(' -> ')[0], layers).floor].floor} imports from above): ${via.join(', ')}`);
  }

  const rings = circles(files, edges).map((g) => g.join(' <-> '));
  const ringsAllowed = new Map(circlesAllowed.map((c) => [c.ring, c.why]));
  for (const r of rings) if (!ringsAllowed.has(r)) findings.push(`circle ${r}`);
  // An allowance for what no longer happens goes: the lists say only what is still there.
  for (const u of upwardAllowed)
    if (!upward.has(u.pair)) findings.push(`UPWARD_ALLOWED names ${u.pair}, which no module imports any more: remove it`);
  for (const c of circlesAllowed)
    if (!rings.includes(c.ring)) findings.push(`CIRCLES_ALLOWED names ${c.ring}, which is no circle any more: remove it`);

  const plugged = new Set(
    edges.filter((e) => e.from.startsWith(ENGINE) && PLUG_INS.some((p) => e.to.startsWith(p))).map((e) => `${e.from} -> ${e.to}`),
  );
  for (const e of plugged) findings.push(`engine imports a plug-in: ${e}`);

  return {
    figures: { floors: layers.length, modules: files.length, imports: edges.length, upward: upward.size, circles: rings.length },
    upward: [...upward].map(([pair, via]) => ({ pair, via, allowed: allowed.get(pair) ?? null })),
    circles: rings.map((ring) => ({ ring, allowed: ringsAllowed.get(ring) ?? null })),
    findings,
  };
}

function main(root) {
  const r = check(root);
  const f = r.figures;
  console.log(`lint-layers: ${f.floors} floors, ${f.modules} modules, ${f.imports} imports; ${f.upward} upward, ${f.circles} circles`);
  for (const u of r.upward) if (u.allowed) console.log(`  allowed upward ${u.pair}: ${u.allowed}`);
  for (const c of r.circles) if (c.allowed) console.log(`  allowed circle ${c.ring}: ${c.allowed}`);
  for (const x of r.findings) console.error(x);
  if (r.findings.length > 0) {
    console.error(`lint-layers: ${r.findings.length} finding${r.findings.length === 1 ? '' : 's'}`);
    process.exit(1);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main(resolve(process.argv[2] ?? '.'));
