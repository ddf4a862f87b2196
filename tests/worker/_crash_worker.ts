// Subprocess of the crash-recovery test: runs a worker whose handler announces the task on stdout
// and then hangs, until the test SIGKILLs the process.
import { startWorker } from "../../src/worker/mod.ts";
import { crashFlow } from "./_crash_flow.ts";

const [url] = Deno.args;
const flow = crashFlow(async (_input, ctx) => {
  console.log(`STARTED ${ctx.runId} ${ctx.attempt}`);
  await new Promise(() => {});
  return 0;
});
await startWorker(flow, { connectionString: url, logLevel: "error", heartbeatIntervalMs: 100 });
console.log("READY");
