/**
 * Which worker functions a flows module needs: one per step of every step-queued flow, one per
 * plain flow.
 *
 * @module
 */

import { extractDefinition } from "../dsl/definition.ts";
import { Flow } from "../dsl/flow.ts";
import { workerFunctionName } from "../dsl/function_name.ts";
import { routingOf } from "../dsl/routing.ts";
import { isStepQueuedFlow } from "../dsl/step_queues.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import { CodegenError } from "./errors.ts";
import { byCodePoint } from "./_util.ts";

/**
 * One worker function: what its entrypoint serves and what the manifest records.
 *
 * @example Usage
 * ```ts
 * import type { WorkerFunctionSpec } from "./plan.ts";
 *
 * const spec: WorkerFunctionSpec = {
 *   functionName: "thread-digest--classify",
 *   exportName: "threadDigest",
 *   flowSlug: "thread_digest",
 *   stepSlug: "classify",
 *   queueName: "thread_digest__classify",
 *   queueMode: "step",
 * };
 * ```
 */
export interface WorkerFunctionSpec {
  /** The Edge Function name (see `workerFunctionName()`). */
  readonly functionName: string;
  /** The export of the flows module that holds the flow (`default` for the default export). */
  readonly exportName: string;
  /** The concrete flow slug. */
  readonly flowSlug: string;
  /** The step this function serves; `null` for a plain flow (every step). */
  readonly stepSlug: string | null;
  /** The one queue its worker polls. */
  readonly queueName: string;
  /** The flow's queue mode. */
  readonly queueMode: "flow" | "step";
}

function isDeployable(value: unknown): value is DeployableFlow {
  return value instanceof Flow || isStepQueuedFlow(value);
}

/** A named export wins over `default`; then code-point order, so the choice is stable. */
function preferredExport(names: readonly string[]): string {
  return names.find((name) => name !== "default") ?? names[0];
}

/**
 * Finds every exported `Flow` and step-queued flow of a module namespace and lists the worker
 * functions they need, sorted by function name. The same flow object exported under several names
 * counts once.
 *
 * @param namespace The flows module's exports (`await import(url)`).
 * @param modulePath The module's path, for error messages.
 * @returns The worker functions, sorted by `functionName`.
 * @throws {CodegenError} When the module exports no flow (`no_flows`), a flow without steps
 * (`empty_flow`), or two flows with one slug (`duplicate_flow`).
 * @throws {QueueNameError} When a plain flow's slug is too long to be a queue name.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "../../mod.ts";
 * import { planWorkerFunctions } from "./plan.ts";
 *
 * const flow = new Flow({ slug: "orders" }).step({ slug: "fetch" }, () => 1);
 * const specs = planWorkerFunctions({ orders: withStepQueues(flow) }, "flows.ts");
 * console.log(specs.map((spec) => spec.functionName)); // ["orders--fetch"]
 * ```
 */
export function planWorkerFunctions(
  namespace: Readonly<Record<string, unknown>>,
  modulePath: string,
): WorkerFunctionSpec[] {
  const exportsByFlow = new Map<DeployableFlow, string[]>();
  for (const name of Object.keys(namespace).sort(byCodePoint)) {
    const value = namespace[name];
    if (!isDeployable(value)) continue;
    exportsByFlow.set(value, [...exportsByFlow.get(value) ?? [], name]);
  }
  if (exportsByFlow.size === 0) {
    throw new CodegenError(
      `Cannot generate worker functions: ${
        JSON.stringify(modulePath)
      } exports no Flow and no flow returned by withStepQueues() (only top-level exports count)`,
      { reason: "no_flows", path: modulePath },
    );
  }

  const exportBySlug = new Map<string, string>();
  const specs: WorkerFunctionSpec[] = [];
  for (const [deployable, names] of exportsByFlow) {
    const exportName = preferredExport(names);
    const plain = routingOf(deployable).flow;
    if (plain.steps.length === 0) {
      throw new CodegenError(
        `Cannot generate worker functions: flow ${
          JSON.stringify(plain.slug)
        } (export ${exportName} of ${JSON.stringify(modulePath)}) has no steps`,
        { reason: "empty_flow", path: modulePath, flowSlug: plain.slug, exportNames: names },
      );
    }
    const key = plain.slug.toLowerCase();
    const other = exportBySlug.get(key);
    if (other !== undefined) {
      const pair = [other, exportName].sort(byCodePoint);
      throw new CodegenError(
        `Cannot generate worker functions: exports ${pair[0]} and ${pair[1]} of ${
          JSON.stringify(modulePath)
        } are both flow ${
          JSON.stringify(plain.slug)
        } (slugs compare case-insensitively); a concrete flow has one shape and one queue mode, ` +
          "so export it once and give a changed version a new slug",
        { reason: "duplicate_flow", path: modulePath, flowSlug: plain.slug, exportNames: pair },
      );
    }
    exportBySlug.set(key, exportName);

    const definition = extractDefinition(deployable);
    if (definition.queue_mode === "step") {
      for (const route of definition.routes) {
        specs.push({
          functionName: workerFunctionName(definition.flow_slug, route.step_slug),
          exportName,
          flowSlug: definition.flow_slug,
          stepSlug: route.step_slug,
          queueName: route.queue_name,
          queueMode: "step",
        });
      }
    } else {
      specs.push({
        functionName: workerFunctionName(definition.flow_slug, null),
        exportName,
        flowSlug: definition.flow_slug,
        stepSlug: null,
        queueName: definition.routes[0].queue_name,
        queueMode: "flow",
      });
    }
  }
  return specs.sort((a, b) => byCodePoint(a.functionName, b.functionName));
}
