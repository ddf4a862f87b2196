/**
 * The flow DSL as users write flows: typed, immutable flow definitions, step queues and deployed
 * flows. Everything here is synchronous and pure; nothing touches the database. Tooling (queue
 * names, definition extraction) is exported from `@sluice/sluice/admin`.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 *
 * const flow = new Flow<{ url: string }>({ slug: "scrape" })
 *   .step({ slug: "fetch" }, async (input) => (await fetch(input.url)).text())
 *   .step({ slug: "size", dependsOn: ["fetch"] }, (deps) => deps.fetch.length);
 * const queued = withStepQueues(flow);
 * ```
 *
 * @module
 */

export * from "./concurrency.ts";
export * from "./condition.ts";
export * from "./context.ts";
export {
  defineDeployedFlow,
  type DeployedFlow,
  type DeployedFlowOptions,
} from "./deployed_flow.ts";
export * from "./errors.ts";
export * from "./flow.ts";
export * from "./json.ts";
export * from "./limits.ts";
export type { QueueMode } from "./routing.ts";
export * from "./signature.ts";
export type {
  StandardSchemaIssue,
  StandardSchemaProps,
  StandardSchemaResult,
  StandardSchemaTypes,
  StandardSchemaV1,
} from "./standard_schema.ts";
export {
  type DebounceOptions,
  type FlowControlStartOptions,
  IdempotencyConflictError,
  MAX_DEBOUNCE_SECONDS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_PRIORITY,
  StartOptionError,
} from "./start_options.ts";
export * from "./step_definition.ts";
export {
  type StepQueuedFlow,
  type StepQueuesOptions,
  type StepRoute,
  withStepQueues,
} from "./step_queues.ts";
export * from "./types.ts";
