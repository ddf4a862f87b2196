/**
 * One worker process of the chaos benchmark: `deno run -A bench/_chaos_worker.ts <url> <name>`
 * runs `startWorker` for the `chaos` flow until it is killed. Its handlers log their executions
 * through a pool of their own, separate from the worker's.
 *
 * @module
 */
import postgres from "postgres";
import { startWorker } from "../src/worker/mod.ts";
import { chaosFlow } from "./_chaos_flow.ts";

const [url, name] = Deno.args;
// After the restart, reconnect every 100 ms (postgres.js backs off up to 20 s by default) and give
// up on a connection attempt after 2 s (one begun while the server restarts can otherwise hang
// for the default 30 s), so that executions' ends are recorded while their worker still lives.
const log = postgres(url, {
  max: 4,
  prepare: false,
  backoff: 0.1,
  connect_timeout: 2,
  onnotice: () => {},
});
await startWorker(chaosFlow(log, name), {
  connectionString: url,
  maxConcurrent: 10,
  logLevel: "warn",
  // Recovery as often as it may run, so that the stall window alone decides when it acts.
  heartbeatIntervalMs: 1000,
  stalledCheckIntervalMs: 1000,
});
