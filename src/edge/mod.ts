/**
 * The Supabase Edge adapter: serves a worker function over HTTP. The first authorized request
 * starts its worker inside `EdgeRuntime.waitUntil`; when the isolate ends, the worker stops
 * polling, one successor is requested from the function's own URL (unless the function is disabled
 * or restart-paused) and in-flight tasks drain. A step-queued flow has one such function per step.
 * The same entrypoint runs as a plain Deno process for local development.
 *
 * @example Usage
 * ```ts ignore
 * // supabase/functions/orders-worker/index.ts
 * import { Flow } from "@sluice/sluice";
 * import { serveWorker } from "@sluice/sluice/edge";
 *
 * const orders = new Flow<{ orderId: string }>({ slug: "orders" })
 *   .step({ slug: "charge" }, (input) => ({ charged: input.orderId }));
 *
 * serveWorker(orders, { functionName: "orders-worker" });
 * ```
 *
 * @module
 */

export * from "./create_worker_handler.ts";
export * from "./edge_options.ts";
export * from "./serve_worker.ts";
