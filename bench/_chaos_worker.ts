/**
 * One worker process of the chaos benchmark:
 * `deno run -A bench/_chaos_worker.ts <url> <name> <ends file>` runs `startWorker` for the `chaos`
 * flow and for the subflow shape's `chaos_sub` and `chaos_child` until it is killed (a kill takes
 * all three). Its handlers record their executions through a pool of their own,
 * separate from the worker's, and their ends in the given file too.
 *
 * @module
 */
import postgres from "postgres";
import { startWorker } from "../src/worker/mod.ts";
import { chaosChildFlow, chaosFlow, chaosSubflowFlow, MAX_CONCURRENT } from "./_chaos_flow.ts";

const [url, worker, endsPath] = Deno.args;
// After the restart, reconnect every 100 ms (postgres.js backs off up to 20 s by default) and give
// up on a connection attempt after 2 s (one begun while the server restarts can otherwise hang for
// the default 30 s), so that handlers fail fast rather than time out while it is away.
const sql = postgres(url, {
  max: 4,
  prepare: false,
  backoff: () => 0.1,
  connect_timeout: 2,
  onnotice: () => {},
});
const log = { sql, worker, endsPath };
for (const flow of [chaosFlow(log), chaosChildFlow(log), chaosSubflowFlow(log)]) {
  await startWorker(flow, {
    connectionString: url,
    maxConcurrent: MAX_CONCURRENT,
    logLevel: "warn",
    // Recovery as often as it may run, so that the stall window alone decides when it acts.
    heartbeatIntervalMs: 1000,
    stalledCheckIntervalMs: 1000,
  });
}
