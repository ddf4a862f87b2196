// Subprocess of the concurrency race tests: a worker of one race flow whose handler prints one
// JSON line when it starts and one when it ends ({ e: "s" | "e", key, n, t }, t from the shared
// wall clock in ms), after `sleep` ms, or never ending when `sleep` is "hang".
import { startWorker } from "../../src/worker/mod.ts";
import { raceFlow, type RaceInput, rateFlow, stallFlow } from "./_race_flows.ts";

const [url, flowName, sleep, maxConcurrent] = Deno.args;

function now(): number {
  return performance.timeOrigin + performance.now();
}

async function handler(input: RaceInput): Promise<number> {
  console.log(JSON.stringify({ e: "s", key: input.key, n: input.n, t: now() }));
  if (sleep === "hang") await new Promise(() => {});
  await new Promise((resolve) => setTimeout(resolve, Number(sleep)));
  console.log(JSON.stringify({ e: "e", key: input.key, n: input.n, t: now() }));
  return input.n;
}

const flow = flowName === "stall"
  ? stallFlow(handler)
  : flowName === "rated"
  ? rateFlow(handler)
  : raceFlow(handler);
await startWorker(flow, {
  connectionString: url,
  logLevel: "error",
  heartbeatIntervalMs: 100,
  stalledCheckIntervalMs: 100,
  maxConcurrent: Number(maxConcurrent),
});
console.log("READY");
