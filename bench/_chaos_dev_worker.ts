/**
 * Subprocess of the chaos benchmark's development-recompile fault: a development worker on shape
 * A of `chaos_dev`, frozen (SIGSTOP) and thawed by the benchmark. Prints `READY` once registered
 * and `DONE <status>` when the worker stops.
 *
 * @module
 */
import { startWorker } from "../src/worker/mod.ts";
import { devShapeA } from "./_chaos_dev_flow.ts";

const [url] = Deno.args;
const worker = await startWorker(devShapeA(), {
  connectionString: url,
  environment: "development",
  logLevel: "warn",
});
console.log("READY");
await worker.done;
console.log(`DONE ${worker.status}`);
