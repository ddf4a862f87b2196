// Subprocess of the priority test: a worker with one slot, so its reads take one task at a time.
import { startWorker } from "../../src/worker/mod.ts";
import { racingFlow } from "./_priority_flow.ts";

const [url] = Deno.args;
await startWorker(racingFlow, {
  connectionString: url,
  logLevel: "error",
  heartbeatIntervalMs: 100,
  maxConcurrent: 1,
});
console.log("READY");
