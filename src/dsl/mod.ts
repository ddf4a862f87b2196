/**
 * The flow DSL: typed, immutable flow definitions, queue-name derivation and definition
 * extraction. Everything here is synchronous and pure; nothing touches the database.
 *
 * @example Usage
 * ```ts
 * import { extractDefinition, Flow, withStepQueues } from "@sluice/sluice";
 *
 * const flow = new Flow<{ url: string }>({ slug: "scrape" })
 *   .step({ slug: "fetch" }, async (input) => (await fetch(input.url)).text())
 *   .step({ slug: "size", dependsOn: ["fetch"] }, (deps) => deps.fetch.length);
 * const definition = extractDefinition(withStepQueues(flow));
 * ```
 *
 * @module
 */

export * from "./condition.ts";
export * from "./context.ts";
export * from "./definition.ts";
export * from "./deployed_flow.ts";
export * from "./errors.ts";
export * from "./flow.ts";
export * from "./function_name.ts";
export * from "./json.ts";
export * from "./limits.ts";
export * from "./queue_name.ts";
export type { QueueMode } from "./routing.ts";
export * from "./signature.ts";
export * from "./schedule_times.ts";
export * from "./slug.ts";
export * from "./step_definition.ts";
export * from "./step_queues.ts";
export * from "./types.ts";
