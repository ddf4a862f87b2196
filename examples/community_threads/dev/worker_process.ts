/**
 * One worker of either version as its own process, for the scenario tests and the benchmark
 * (a generated Edge Function entrypoint listens on port 8000, so several cannot run side by side
 * outside the Edge runtime; this starts the same worker without the HTTP host):
 *
 *   deno run -A dev/worker_process.ts <baseline|sluice> <classify|deliver_slack>
 *
 * Reads `DATABASE_URL`, `SLACK_URL`, `SLACK_TIMEOUT_MS`, `CLASSIFY_DELAY_MS` and
 * `WORKER_CONCURRENCY` (default 10); prints `ready` once it polls, stops gracefully on SIGTERM.
 * The sluice version's `deliver_slack` process also runs the worker of `mark_failed`, the step that
 * gives up on a delivery (its own Edge Function when deployed), so that the scenarios start the same
 * processes for both versions.
 *
 * @module
 */

import postgres from "postgres";
import { startWorker } from "@sluice/sluice/worker";
import { communityThreads } from "../supabase/functions/_shared/flows.ts";
import { startClassifyWorker } from "../supabase/functions/_shared/baseline/classify_worker.ts";
import { startDeliverWorker } from "../supabase/functions/_shared/baseline/deliver_worker.ts";

const [version, step] = Deno.args;
if (
  (version !== "baseline" && version !== "sluice") ||
  (step !== "classify" && step !== "deliver_slack")
) {
  console.error(
    `Cannot start a worker: expected <baseline|sluice> <classify|deliver_slack>, got ${
      JSON.stringify(Deno.args)
    }`,
  );
  Deno.exit(2);
}
const url = Deno.env.get("DATABASE_URL") ?? "";
const maxConcurrent = Number(Deno.env.get("WORKER_CONCURRENCY") ?? "10");

let stop: () => Promise<void>;
if (version === "sluice") {
  const steps = step === "classify"
    ? ["classify"] as const
    : ["deliver_slack", "mark_failed"] as const;
  const workers = await Promise.all(steps.map((stepSlug) =>
    startWorker(communityThreads, {
      stepSlug,
      connectionString: url,
      maxConcurrent,
      // Frequent heartbeats, so that stalled-task recovery runs soon after its window opens.
      heartbeatIntervalMs: 1000,
      stalledCheckIntervalMs: 1000,
      logLevel: "warn",
    })
  ));
  stop = async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
  };
} else {
  const sql = postgres(url, { prepare: false, max: 4, onnotice: () => {} });
  const start = step === "classify" ? startClassifyWorker : startDeliverWorker;
  const worker = start({ sql, maxConcurrent });
  stop = async () => {
    await worker.stop();
    await sql.end();
  };
}
Deno.addSignalListener("SIGTERM", () => {
  void stop().then(() => Deno.exit(0));
});
console.log("ready");
