/**
 * The producer client: a connection configured for sluice, startup compilation, starting runs
 * and reading or awaiting their results.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { connect, startFlow, waitForRun } from "@sluice/sluice/client";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const flow = new Flow<{ n: number }>({ slug: "math" })
 *   .step({ slug: "double" }, (input) => input.n * 2);
 * const runId = await startFlow(sql, flow, { n: 21 });
 * console.log(await waitForRun(sql, runId, { timeoutMs: 10_000, flow })); // { double: 42 }
 * ```
 *
 * @module
 */

export * from "../deploy/aliases.ts";
export * from "./cancel_run.ts";
export * from "./compile_flow.ts";
export * from "../db/connect.ts";
export * from "./errors.ts";
export * from "../deploy/errors.ts";
export * from "./get_run.ts";
export * from "./get_run_tasks.ts";
export * from "./retry_run.ts";
export * from "./schedule_errors.ts";
export * from "./schedules.ts";
export * from "./send_signal.ts";
export * from "./start_flow.ts";
export * from "./wait_for_run.ts";
export * from "./watch_run.ts";
export * from "../events/run_event.ts";
