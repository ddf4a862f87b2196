/**
 * The Edge Function body of a baseline worker: opens a pool from `SUPABASE_DB_URL`, starts the
 * worker on the first request (a cron job or a database webhook pings the function) and stops it
 * when the isolate is about to end. The worker's messages left in hand reappear when their
 * visibility ends; restarting the function before the isolate's wall-clock limit is left to the
 * pinging schedule.
 *
 * @module
 */

import postgres from "postgres";
import type { BaselineWorkerOptions } from "./classify_worker.ts";
import type { QueueWorker } from "./queue_worker.ts";

/** Serves a baseline worker started by `start`. */
export function serveBaselineWorker(
  start: (options: BaselineWorkerOptions) => QueueWorker,
): void {
  const url = Deno.env.get("SUPABASE_DB_URL");
  if (url === undefined || url === "") {
    throw new TypeError(
      "Cannot start the baseline worker: SUPABASE_DB_URL is not set",
    );
  }
  let worker: QueueWorker | undefined;
  const sql = postgres(url, { prepare: false, max: 4 });
  addEventListener("beforeunload", () => {
    void worker?.stop().then(() => sql.end());
  });
  Deno.serve(() => {
    worker ??= start({ sql });
    return new Response("running\n");
  });
}
