/**
 * sluice: a Postgres-native workflow engine for Supabase. The root export is what producers and
 * workers use: the flow DSL, starting, awaiting, watching, signalling, cancelling and retrying
 * runs, the worker, and the errors to catch. Operations and tooling (compiling ahead of workers,
 * aliases, schedules, bulk cancels, queue names) are in `@sluice/sluice/admin`; Edge Functions in
 * `@sluice/sluice/edge`; the browser client in `@sluice/sluice/browser`; tests in
 * `@sluice/sluice/testing`. `@sluice/sluice/client` and `@sluice/sluice/worker` are the producer's
 * and the worker's halves of this export, for code that loads only one.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, Flow, startFlow, startWorker, waitForRun } from "@sluice/sluice";
 *
 * const flow = new Flow<{ n: number }>({ slug: "math" })
 *   .step({ slug: "double" }, (input) => input.n * 2);
 * const worker = await startWorker(flow);
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const runId = await startFlow(sql, flow, { n: 21 });
 * console.log(await waitForRun(sql, runId, { flow })); // { double: 42 }
 * await worker.stop();
 * ```
 *
 * @module
 */

export * from "./src/dsl/mod.ts";
export * from "./src/client/mod.ts";
export * from "./src/worker/mod.ts";
