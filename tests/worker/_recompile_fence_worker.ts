// Subprocess of the recompile-fence test: a development worker on shape A whose handler announces
// the task on stdout and finishes once the gate file exists; prints how the worker ended.
import { startWorker } from "../../src/worker/mod.ts";
import { shapeA } from "./_recompile_fence_flow.ts";

const [url, gate] = Deno.args;
const flow = shapeA(async (_input, ctx) => {
  console.log(`STARTED ${ctx.runId} ${ctx.stepSlug}`);
  for (;;) {
    try {
      await Deno.stat(gate);
      return "A";
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
});
const worker = await startWorker(flow, {
  connectionString: url,
  environment: "development",
  logLevel: "warn",
  heartbeatIntervalMs: 100,
});
console.log("READY");
await worker.done;
console.log(`DONE ${worker.status}`);
