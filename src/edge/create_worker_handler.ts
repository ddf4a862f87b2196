/**
 * `createWorkerHandler()`: the request handler of a worker function, for hosting in a
 * `Deno.serve` of your own. {@linkcode serveWorker} wraps it for a complete Edge Function.
 *
 * @module
 */

import type { DeployableFlow } from "../dsl/types.ts";
import type { FlowOptionsArgument } from "../worker/worker_options.ts";
import { WorkerFunctionHost } from "./_host.ts";
import type { WorkerFunctionHandler, WorkerFunctionOptions } from "./edge_options.ts";

/**
 * Creates the request handler of the worker function of `flow`, for hosting in a `Deno.serve` of
 * your own. Use {@linkcode serveWorker} for a complete Edge Function entrypoint.
 *
 * The options are keyed on the flow ({@linkcode WorkerFunctionOptions}): a step-queued flow
 * (`withStepQueues()`, deployed or not) has one function per step, named by the required
 * `stepSlug`, whose worker polls that step's private queue; `functionName` then defaults to the
 * name `deno task gen:functions` gives the function (`workerFunctionName(flowSlug, stepSlug)`). A
 * deployed flow's function is the wrapped flow's, whose worker also activates the alias at
 * startup with `activate: "on-startup"` (see `startWorker`); on Edge every respawn starts a
 * worker, which finds the alias already active. Every option is checked here, when the handler is
 * created, before any request or database access.
 *
 * @typeParam F The flow: plain, step-queued or deployed.
 * @param flow The flow whose steps the worker runs.
 * @param options Worker, connection, authorization and lifecycle options; required for a
 * step-queued flow (its `stepSlug`).
 * @returns The handler; pass `handler.fetch` to `Deno.serve`.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of a step-queued flow, or given
 * for a plain flow; the error lists the valid slugs.
 * @throws {TypeError} When options are inconsistent (both `sql` and `connectionString`, an
 * invalid `selfUrl`, `activate` for a concrete flow or neither `"on-startup"` nor `"manual"`).
 * @throws {RangeError} When a numeric option (`wallClockBudgetMs`, `drainTimeoutMs`, `poolSize`,
 * `maxConcurrent`, ...) is out of range.
 *
 * @example A plain flow
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { createWorkerHandler } from "@sluice/sluice/edge";
 *
 * const flow = new Flow<{ n: number }>({ slug: "double" })
 *   .step({ slug: "twice" }, (input) => input.n * 2);
 * const handler = createWorkerHandler(flow, { secret: Deno.env.get("WORKER_SECRET") });
 * Deno.serve({ port: 8080 }, handler.fetch);
 * ```
 *
 * @example One step of a deployed step-queued flow
 * ```ts ignore
 * import { defineDeployedFlow, Flow, withStepQueues } from "@sluice/sluice";
 * import { createWorkerHandler } from "@sluice/sluice/edge";
 *
 * const v2 = withStepQueues(
 *   new Flow<{ text: string }>({ slug: "digest_v2" })
 *     .step({ slug: "classify" }, (input) => input.text.length)
 *     .step({ slug: "deliver", dependsOn: ["classify"] }, (deps) => deps.classify),
 * );
 * const digest = defineDeployedFlow(v2, { alias: "digest" });
 * // function "digest-v2--classify", queue "digest_v2__classify"
 * const handler = createWorkerHandler(digest, { stepSlug: "classify", activate: "on-startup" });
 * Deno.serve({ port: 8080 }, handler.fetch);
 * ```
 */
export function createWorkerHandler<F extends DeployableFlow>(
  flow: F,
  ...[options]: FlowOptionsArgument<F, WorkerFunctionOptions<F>>
): WorkerFunctionHandler {
  return new WorkerFunctionHost(flow, (options ?? {}) as WorkerFunctionOptions);
}
