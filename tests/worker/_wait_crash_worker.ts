// Subprocess of the waits crash test: a worker whose step after the wait announces its task on
// stdout and then hangs, until the test SIGKILLs the process.
import { startWorker } from "../../src/worker/mod.ts";
import { waitCrashFlow } from "./_wait_crash_flow.ts";

const [url] = Deno.args;
const flow = waitCrashFlow(async () => {
  console.log("STARTED after");
  await new Promise(() => {});
  return "never";
});
await startWorker(flow, { connectionString: url, logLevel: "error", heartbeatIntervalMs: 100 });
console.log("READY");
