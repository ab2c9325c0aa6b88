/**
 * Starts a real node in this process on ephemeral loopback ports with a fresh temp data
 * directory, and tears it down (directory included) at the end of the test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startNode, type RunningNode } from '../../src/node.js';
import { log } from '../../src/log.js';
import { setReplyCheck } from '../../src/http/route.js';

log.setLevel(process.env.CAIRN_LOG_LEVEL === 'debug' ? 'debug' : 'warn');
// Every reply a test provokes is also checked against its reply schema (src/http/route.ts).
setReplyCheck(true);

export interface TestNode {
  node: RunningNode;
  dataDir: string;
  ledgerUrl: string;
  nodeUrl: string;
  dataUrl: string;
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

export async function startTestNode(env: Record<string, string> = {}, dataDir?: string): Promise<TestNode> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'cairn-test-'));
  const config = loadConfig([], {
    CAIRN_DATA_DIR: dir,
    CAIRN_LEDGER_BIND: '127.0.0.1:0',
    CAIRN_NODE_BIND: '127.0.0.1:0',
    CAIRN_DATA_BIND: '127.0.0.1:0',
    CAIRN_NETWORK_BIND: '127.0.0.1:0',
    CAIRN_COMPONENT_BIND: 'off',
    CAIRN_POOL_THREADS: '1',
    ...env,
  });
  const node = await startNode(config);
  return {
    node,
    dataDir: dir,
    ledgerUrl: `http://127.0.0.1:${node.ports.ledger}`,
    nodeUrl: `http://127.0.0.1:${node.ports.node}`,
    dataUrl: `http://127.0.0.1:${node.ports.data}`,
    async stop(opts = {}): Promise<void> {
      await node.close();
      if (!opts.keepData) rmSync(dir, { recursive: true, force: true });
    },
  };
}
