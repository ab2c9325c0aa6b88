import t from 'tap';
import { startTestNode } from './helpers/node.js';
t.test('probe', async (t) => {
  const c0 = process.cpuUsage();
  for (let i = 0; i < 3; i++) { const n = await startTestNode(); await new Promise((r) => setTimeout(r, 1500)); await n.stop(); }
  const c2 = process.cpuUsage(c0);
  console.error('3 starts cpu', (c2.user+c2.system)/1e3);
  t.ok(true);
});
