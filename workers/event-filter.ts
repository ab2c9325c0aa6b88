/**
 * Entry of the event filter thread (worker_threads): compiles event subscribers' filters and
 * matches blocks against them (src/component/filter-thread.ts) for the client event service
 * on the HTTP thread (src/component/filter-client.ts). All traffic is messages, one answer
 * per request, in order.
 */
import { parentPort } from 'node:worker_threads';
import { FilterThread, type ToFilters } from '../src/component/filter-thread.js';

if (parentPort === null) throw new Error('workers/event-filter.ts runs only as a worker thread');
const port = parentPort;
const filters = new FilterThread();

port.on('message', (m: ToFilters) => {
  // Nothing left to hold the thread: it ends, as a thread that returns does.
  if (m.op === 'close') return port.close();
  let reply: ReturnType<FilterThread['handle']>;
  try {
    reply = filters.handle(m);
  } catch (err) {
    // A fault of this code, not of the request: answered (the HTTP thread ends what asked), never silence.
    reply = !('req' in m) ? undefined : { req: m.req, error: `event filter thread: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (reply) port.postMessage(reply);
});
