/**
 * `@sluice/sluice/testing`: run flows in `deno test` without a server. {@linkcode startTestDatabase}
 * gives an embedded database with sluice installed (or the database at `DATABASE_URL`),
 * {@linkcode runFlow} runs one flow to completion with in-process workers for every route and
 * skips retry delays, so a step that fails and retries after a minute completes at once; the
 * database's {@linkcode TestClock} moves sluice's time forward by hand: retry delays and task
 * timeouts (a task past its timeout is recovered as stalled).
 *
 * @example Test a flow with a retry
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { runFlow, startTestDatabase } from "@sluice/sluice/testing";
 *
 * Deno.test("retries", async () => {
 *   await using db = await startTestDatabase();
 *   const flow = new Flow<{ n: number }>({ slug: "t", baseDelay: 60 })
 *     .step({ slug: "a" }, (input, ctx) => {
 *       if (ctx.attempt === 1) throw new Error("flaky");
 *       return input.n;
 *     });
 *   const result = await runFlow(db, flow, { n: 1 });
 *   console.log(result.output, result.attempts("a")); // { a: 1 } 2
 * });
 * ```
 *
 * @module
 */

export {
  EmbeddedPortInUseError,
  type EmbeddedPostgres,
  startEmbeddedPostgres,
  type StartEmbeddedPostgresOptions,
} from "../embedded/embedded_postgres.ts";
export {
  defaultEmbeddedCacheDir,
  type EmbeddedSluice,
  startEmbeddedSluice,
  type StartEmbeddedSluiceOptions,
} from "../embedded/embedded_sluice.ts";
export { startTestDatabase, type TestDatabase } from "./test_database.ts";
export { TestClock } from "./test_clock.ts";
export { type FlowResult, FlowRunTimeoutError, runFlow, type RunFlowOptions } from "./run_flow.ts";
