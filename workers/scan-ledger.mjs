// Child-process entry of the start-up scan (src/store/scan.ts): reads every key and value of
// every sub-database of the LMDB files named on the command line. Plain JavaScript, so that
// it starts in a fraction of the time a TypeScript entry would take from the sources.
import { open } from 'lmdb';

/** Reads every record of the environment at `path` (each value is copied out of the map); returns the bytes read. */
export function scanEnvironment(path) {
  const root = open({ path, readOnly: true, maxDbs: 1024, encoding: 'binary', keyEncoding: 'binary' });
  let bytes = 0;
  try {
    const names = [];
    for (const { key } of root.getRange({})) names.push(Buffer.from(key).toString('utf8'));
    for (const name of names) {
      for (const keyEncoding of ['binary', 'uint32']) {
        try {
          const db = root.openDB({ name, encoding: 'binary', keyEncoding });
          for (const { value } of db.getRange({})) bytes += value.length;
        } catch {
          continue; // opened with other flags (integer keys): the next encoding
        }
        break;
      }
    }
  } finally {
    void root.close();
  }
  return bytes;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    for (const path of process.argv.slice(2)) scanEnvironment(path);
  } catch {
    process.exit(1);
  }
}
