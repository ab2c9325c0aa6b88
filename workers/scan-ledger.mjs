// Child-process entry of the background scan (src/store/scan.ts): reads every key and value of
// every sub-database of the LMDB files named on the command line, and prints the value bytes
// read so far, a number a line, about every 64 MiB and at the end. Plain JavaScript, so that it
// starts in a fraction of the time a TypeScript entry would take from the sources.
import { open } from 'lmdb';

const STEP = 64 * 1024 * 1024;

/** Reads every record of the environment at `path` (each value is copied out of the map); returns the bytes read, counted from `from`. */
export function scanEnvironment(path, onBytes = () => {}, from = 0) {
  const root = open({ path, readOnly: true, maxDbs: 1024, encoding: 'binary', keyEncoding: 'binary' });
  let bytes = from;
  let next = from + STEP;
  try {
    const names = [];
    for (const { key } of root.getRange({})) names.push(Buffer.from(key).toString('utf8'));
    for (const name of names) {
      for (const keyEncoding of ['binary', 'uint32']) {
        try {
          const db = root.openDB({ name, encoding: 'binary', keyEncoding });
          for (const { value } of db.getRange({})) {
            bytes += value.length;
            if (bytes >= next) {
              next = bytes + STEP;
              onBytes(bytes);
            }
          }
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
  const say = (n) => process.stdout.write(`${n}\n`);
  try {
    let bytes = 0;
    for (const path of process.argv.slice(2)) bytes = scanEnvironment(path, say, bytes);
    say(bytes);
  } catch {
    process.exit(1);
  }
}
