/**
 * The worker runtime: runs a flow's step handlers for tasks queued in PostgreSQL.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { RetryAfterError, startWorker } from "@sluice/sluice/worker";
 *
 * const flow = new Flow<{ url: string }>({ slug: "fetch_page", maxAttempts: 5 })
 *   .step({ slug: "fetch" }, async (input, context) => {
 *     const response = await fetch(input.url, { signal: context.signal });
 *     if (response.status === 429) throw new RetryAfterError(30);
 *     return await response.text();
 *   });
 * const worker = await startWorker(flow, { connectionString: Deno.env.get("DATABASE_URL")! });
 * await worker.done;
 * ```
 *
 * @module
 */

export {
  jsonLineSink,
  type LogLevel,
  type LogRecord,
  type LogRecordLevel,
  type LogSink,
} from "./logger.ts";
export * from "./retry_after_error.ts";
export { startWorker } from "./start_worker.ts";
export * from "./step_slug_error.ts";
export * from "./worker_options.ts";
