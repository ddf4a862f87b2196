// Subprocess of the cancel-race test: workers of both race flows, in a process of their own so
// the test's cancels and signals race them over separate connections. Prints READY when both run.
import { startWorker } from "../../src/worker/mod.ts";
import { chainFlow, signalFlow } from "./_cancel_race_flow.ts";

const [url] = Deno.args;
const options = {
  connectionString: url,
  logLevel: "error",
  heartbeatIntervalMs: 100,
  env: {},
} as const;
await startWorker(chainFlow, options);
await startWorker(signalFlow, options);
console.log("READY");
