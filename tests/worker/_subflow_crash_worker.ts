// Subprocess of the subflow crash test: workers of the child and the parent flow; the child's
// handler completes elements below 25 and hangs on the others after announcing the first of them
// on stdout, until the test SIGKILLs the process.
import { startWorker } from "../../src/worker/mod.ts";
import { subflowCrashChild, subflowCrashParent } from "./_subflow_crash_flow.ts";

const [url] = Deno.args;
let announced = false;
const child = subflowCrashChild(async (i) => {
  if (i < 25) return i * 10;
  if (!announced) {
    announced = true;
    console.log("HANGING");
  }
  await new Promise(() => {});
  return -1;
});
const options = { connectionString: url, logLevel: "error", heartbeatIntervalMs: 100 } as const;
await startWorker(child, { ...options, maxConcurrent: 10 });
await startWorker(subflowCrashParent(child), options);
console.log("READY");
