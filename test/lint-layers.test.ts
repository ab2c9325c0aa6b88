/**
 * scripts/lint-layers.mjs, the layering `npm run lint` checks: an upward import, a circle
 * (type-only included) and an engine import of a plug-in fail it; an allowed upward pair
 * passes; the project's own tree passes, and docs/architecture.md draws the script's
 * floors. Run on temp trees and, as `npm run lint` runs it, on the project.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LAYERS as LAYERS_OF_SCRIPT, check, placeOf } from '../scripts/lint-layers.mjs';

const SCRIPT = join(import.meta.dirname, '..', 'scripts', 'lint-layers.mjs');

const LAYERS = [
  { floor: 'base', what: '', holds: ['src/log.ts', 'src/store/'] },
  { floor: 'engine', what: '', holds: ['src/ledger/'] },
  { floor: 'plug-ins', what: '', holds: ['src/cluster/', 'src/ledger/odd.ts'] },
  { floor: 'top', what: '', holds: ['src/node.ts', 'workers/'] },
];

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-lint-layers-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

t.test('a module sits on the floor of the entry that names it most closely', async (t) => {
  t.same(placeOf('src/ledger/a.ts', LAYERS), { entry: 'src/ledger/', floor: 1 });
  t.same(placeOf('src/ledger/odd.ts', LAYERS), { entry: 'src/ledger/odd.ts', floor: 2 });
  t.equal(placeOf('src/other.ts', LAYERS), null);
});

t.test('imports down and across a floor pass', async (t) => {
  const root = tree({
    'src/log.ts': 'export const log = 1;\n',
    'src/store/db.ts': "import { log } from '../log.js';\nexport const db = log;\n",
    'src/ledger/a.ts': "import { db } from '../store/db.js';\nimport type { B } from './b.js';\nexport const a = db;\nexport type A = B;\n",
    'src/ledger/b.ts': 'export type B = number;\n',
    'src/node.ts': "import { a } from './ledger/a.js';\nexport const n = a;\n",
    'workers/w.ts': "import { n } from '../src/node.js';\nexport const w = n;\n",
  });
  const r = check(root, { layers: LAYERS, upwardAllowed: [], circlesAllowed: [] });
  t.same(r.findings, []);
  t.match(r.figures, { floors: 4, modules: 6, imports: 5, upward: 0, circles: 0 });
});

t.test('upward imports, type-only circles and engine imports of a plug-in fail; an allowed pair passes', async (t) => {
  const root = tree({
    'src/log.ts': "export const log = 1;\nexport type N = import('./node.js').N;\n",
    'src/ledger/a.ts': "import type { C } from '../cluster/c.js';\nexport type A = C;\nexport const load = () => import('./b.js');\n",
    'src/ledger/b.ts': "export type { A } from './a.js';\nimport type { A } from './a.js';\nexport type B = A;\n",
    'src/cluster/c.ts': 'export type C = number;\n',
    'src/node.ts': 'export type N = number;\n',
  });
  const r = check(root, { layers: LAYERS, upwardAllowed: [], circlesAllowed: [] });
  t.same(r.findings.sort(), [
    'circle src/ledger/a.ts <-> src/ledger/b.ts',
    'engine imports a plug-in: src/ledger/a.ts -> src/cluster/c.ts',
    'upward import src/ledger/ -> src/cluster/ (engine imports from above): src/ledger/a.ts -> src/cluster/c.ts',
    'upward import src/log.ts -> src/node.ts (base imports from above): src/log.ts -> src/node.ts',
  ]);
  t.match(r.figures, { upward: 2, circles: 1 });
  const allowed = check(root, {
    layers: LAYERS,
    upwardAllowed: [{ pair: 'src/log.ts -> src/node.ts', why: 'a test' }],
    circlesAllowed: [{ ring: 'src/ledger/a.ts <-> src/ledger/b.ts', why: 'a test' }],
  });
  t.same(
    allowed.findings.sort(),
    [
      'engine imports a plug-in: src/ledger/a.ts -> src/cluster/c.ts',
      'upward import src/ledger/ -> src/cluster/ (engine imports from above): src/ledger/a.ts -> src/cluster/c.ts',
    ],
    'the engine rule has no allow-list, and the pairs not allowed still fail',
  );
  const many = check(root, {
    layers: LAYERS,
    upwardAllowed: ['a', 'b', 'c'].map((pair) => ({ pair, why: '' })),
    circlesAllowed: [],
  });
  t.ok(many.findings.includes('UPWARD_ALLOWED holds 3 entries: 2 at most'));
  t.ok(many.findings.includes('UPWARD_ALLOWED names a, which no module imports any more: remove it'), 'an allowance for what is gone fails');
  const stale = check(root, { layers: LAYERS, upwardAllowed: [], circlesAllowed: [{ ring: 'src/x.ts <-> src/y.ts', why: '' }] });
  t.ok(stale.findings.includes('CIRCLES_ALLOWED names src/x.ts <-> src/y.ts, which is no circle any more: remove it'));
});

t.test('a module on no floor fails', async (t) => {
  const root = tree({ 'src/stray.ts': 'export const s = 1;\n' });
  t.same(check(root, { layers: LAYERS, upwardAllowed: [], circlesAllowed: [] }).findings, [
    'src/stray.ts: on no floor (add it to LAYERS in scripts/lint-layers.mjs)',
  ]);
});

t.test('the project source itself passes, and the figures are printed', async (t) => {
  const r = spawnSync(process.execPath, [SCRIPT], { cwd: join(import.meta.dirname, '..'), encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /^lint-layers: \d+ floors, \d+ modules, \d+ imports; [012] upward, \d+ circles/);
});

t.test("docs/architecture.md's Layers table is the script's LAYERS", async (t) => {
  const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Layers'), doc.indexOf('\n## ', doc.indexOf('## Layers') + 1));
  const rows = section
    .split('\n')
    .filter((l) => /^\| \d+ /.test(l))
    .map((l) => {
      const cells = l.split('|').map((c) => c.trim());
      return { floor: (cells[1] ?? '').replace(/^\d+ /, ''), holds: [...(cells[2] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]) };
    });
  t.same(
    rows,
    LAYERS_OF_SCRIPT.map((l) => ({ floor: l.floor, holds: l.holds })),
  );
});
