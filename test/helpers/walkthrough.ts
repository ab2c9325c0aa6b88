/**
 * What the walkthrough tests share (test/walkthrough.test.ts for the README and the guides,
 * test/cluster-walkthrough.test.ts for docs/cluster.md): the marked shell blocks of a
 * markdown file, the files a sandbox links from the repository, and a port probe.
 */
import { connect } from 'node:net';
import { resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
/** What a walkthrough's sandbox directory links from the repository's root. */
export const LINKED = ['package.json', 'node_modules', 'src', 'workers', 'scripts', 'dist', 'tsconfig.json', 'tsconfig.build.json', 'examples'];
const MARK = '<!-- walkthrough -->';

/** The ```sh blocks of a markdown file that follow a `<!-- walkthrough -->` line, in order. */
export function walkthroughBlocks(markdown: string): string[] {
  const lines = markdown.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== MARK || lines[i + 1]?.trim() !== '```sh') continue;
    const end = lines.indexOf('```', i + 2);
    if (end < 0) throw new Error(`unclosed block after line ${i + 1}`);
    out.push(lines.slice(i + 2, end).join('\n'));
    i = end;
  }
  return out;
}

/** Whether something listens on 127.0.0.1:`port`. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((res) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => {
      c.destroy();
      res(true);
    });
    c.once('error', () => res(false));
  });
}
