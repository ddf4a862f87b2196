/**
 * Which worker functions a flows module needs: one per step of every step-queued flow, one per
 * plain flow, except that the steps `withStepQueues(flow, { functions })` maps to one name share
 * that one (co-hosting) function, across flows. A deployed flow (`defineDeployedFlow()`) needs
 * the functions of the flow it wraps.
 *
 * @module
 */

import { extractDefinition, servedStepSlugs } from "../dsl/definition.ts";
import { aliasOf, type DeployedFlow, isDeployedFlow } from "../dsl/deployed_flow.ts";
import { Flow } from "../dsl/flow.ts";
import { workerFunctionName } from "../dsl/function_name.ts";
import { routingOf } from "../dsl/routing.ts";
import { slugProblem } from "../dsl/slug.ts";
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
 *   alias: "thread_digest",
 *   cohosted: false,
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
  /** The alias of a deployed flow (activated by an operator); `null` for a concrete flow. */
  readonly alias: string | null;
  /**
   * Whether `functionName` comes from a `functions` map (`withStepQueues(flow, { functions })`):
   * the function hosts every worker mapped to it (`serveWorkers`), one spec per worker.
   */
  readonly cohosted: boolean;
}

function isDeployable(value: unknown): value is DeployableFlow {
  return value instanceof Flow || isStepQueuedFlow(value) || isDeployedFlow(value);
}

/** The concrete flow a deployable export serves: a deployed flow's wrapped flow, else itself. */
function concreteOf(value: DeployableFlow): Exclude<DeployableFlow, DeployedFlow> {
  return isDeployedFlow(value) ? value.flow : value as Exclude<DeployableFlow, DeployedFlow>;
}

/** A named export wins over `default`; then code-point order, so the choice is stable. */
function preferredExport(names: readonly string[]): string {
  return names.find((name) => name !== "default") ?? names[0];
}

/**
 * Finds every exported `Flow`, step-queued flow and deployed flow of a module namespace and lists
 * the worker functions they need, sorted by function name. The same flow object exported under
 * several names counts once, and so does a concrete flow exported both as itself and deployed
 * under an alias: its functions serve the deployed export and the manifest records the alias.
 *
 * @param namespace The flows module's exports (`await import(url)`).
 * @param modulePath The module's path, for error messages.
 * @returns The worker functions, sorted by `functionName`.
 * @throws {CodegenError} When the module exports no flow (`no_flows`), a flow without steps
 * (`empty_flow`), two flows with one slug or one flow under two aliases (`duplicate_flow`), or a
 * flow whose names break the
 * rules (`invalid_name`, see {@linkcode assertSafeSpec}).
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
  // Exports grouped by the concrete flow they serve; `deployed`: the deployed ones' names by alias.
  const exportsByFlow = new Map<
    DeployableFlow,
    { names: string[]; deployed: Map<string, string[]> }
  >();
  for (const name of Object.keys(namespace).sort(byCodePoint)) {
    const value = namespace[name];
    if (!isDeployable(value)) continue;
    const concrete = concreteOf(value);
    const group = exportsByFlow.get(concrete) ??
      { names: [] as string[], deployed: new Map<string, string[]>() };
    group.names.push(name);
    const alias = aliasOf(value);
    if (alias !== undefined) group.deployed.set(alias, [...group.deployed.get(alias) ?? [], name]);
    exportsByFlow.set(concrete, group);
  }
  if (exportsByFlow.size === 0) {
    throw new CodegenError(
      `Cannot generate worker functions: ${
        JSON.stringify(modulePath)
      } exports no Flow and no flow returned by withStepQueues() or defineDeployedFlow() ` +
        "(only top-level exports count)",
      { reason: "no_flows", path: modulePath },
    );
  }

  const exportBySlug = new Map<string, string>();
  const specs: WorkerFunctionSpec[] = [];
  for (const [concrete, { names, deployed }] of exportsByFlow) {
    const plain = routingOf(concrete).flow;
    if (deployed.size > 1) {
      const pair = [...deployed.values()].map(preferredExport).sort(byCodePoint).slice(0, 2);
      throw new CodegenError(
        `Cannot generate worker functions: exports ${pair[0]} and ${pair[1]} of ${
          JSON.stringify(modulePath)
        } deploy flow ${JSON.stringify(plain.slug)} under the aliases ${
          [...deployed.keys()].map((alias) => JSON.stringify(alias)).join(", ")
        }; export one deployment per concrete flow`,
        { reason: "duplicate_flow", path: modulePath, flowSlug: plain.slug, exportNames: pair },
      );
    }
    const [[alias, deployedNames] = [null, names]] = deployed;
    const exportName = preferredExport(deployedNames);
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

    const definition = extractDefinition(concrete);
    if (definition.queue_mode === "step") {
      const served = servedStepSlugs(definition);
      const hosts = routingOf(concrete).functionNames ?? [];
      definition.routes.forEach((route, index) => {
        if (!served.includes(route.step_slug)) return;
        const own = workerFunctionName(definition.flow_slug, route.step_slug);
        const functionName = hosts[index] ?? own;
        specs.push({
          functionName,
          exportName,
          flowSlug: definition.flow_slug,
          stepSlug: route.step_slug,
          queueName: route.queue_name,
          queueMode: "step",
          alias,
          cohosted: functionName !== own,
        });
      });
    } else {
      specs.push({
        functionName: workerFunctionName(definition.flow_slug, null),
        exportName,
        flowSlug: definition.flow_slug,
        stepSlug: null,
        queueName: definition.routes[0].queue_name,
        queueMode: "flow",
        alias,
        cohosted: false,
      });
    }
  }
  for (const spec of specs) assertSafeSpec(spec, modulePath);
  assertFunctionNamesFree(specs, modulePath);
  return specs.sort((a, b) =>
    byCodePoint(a.functionName, b.functionName) ||
    byCodePoint(a.flowSlug, b.flowSlug) ||
    byCodePoint(a.stepSlug ?? "", b.stepSlug ?? "")
  );
}

/**
 * A co-hosting function's name must not be the function of a plain flow (which hosts no other
 * worker); generated per-step names contain `--`, which co-hosting names cannot.
 */
function assertFunctionNamesFree(specs: readonly WorkerFunctionSpec[], modulePath: string): void {
  for (const spec of specs) {
    if (!spec.cohosted) continue;
    const taken = specs.find((other) =>
      !other.cohosted && other.functionName === spec.functionName
    );
    if (taken === undefined) continue;
    const pair = [taken.exportName, spec.exportName].sort(byCodePoint);
    throw new CodegenError(
      `Cannot generate worker functions: export ${spec.exportName} of ${
        JSON.stringify(modulePath)
      } co-hosts step ${JSON.stringify(spec.stepSlug)} in function ${
        JSON.stringify(spec.functionName)
      }, which is the function of plain flow ${
        JSON.stringify(taken.flowSlug)
      } (export ${taken.exportName}); choose another name in its functions map`,
      { reason: "invalid_name", path: modulePath, flowSlug: spec.flowSlug, exportNames: pair },
    );
  }
}

/**
 * The specs grouped by worker function, in function-name order: one group per function to
 * write (a co-hosting function's group holds one spec per hosted worker).
 *
 * @param specs The worker specs (see `planWorkerFunctions()`).
 * @returns One array of specs per function name.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "../../mod.ts";
 * import { functionsOf, planWorkerFunctions } from "./plan.ts";
 *
 * const flow = new Flow({ slug: "orders" }).step({ slug: "fetch" }, () => 1)
 *   .step({ slug: "ship" }, () => 2);
 * const queued = withStepQueues(flow, { functions: { fetch: "orders-light", ship: "orders-light" } });
 * const specs = planWorkerFunctions({ orders: queued }, "flows.ts");
 * console.log(functionsOf(specs).length); // 1
 * ```
 */
export function functionsOf(
  specs: readonly WorkerFunctionSpec[],
): readonly (readonly WorkerFunctionSpec[])[] {
  const byName = new Map<string, WorkerFunctionSpec[]>();
  for (const spec of specs) {
    byName.set(spec.functionName, [...byName.get(spec.functionName) ?? [], spec]);
  }
  return [...byName.keys()].sort(byCodePoint).map((name) => byName.get(name)!);
}

/** What a function name and a queue name look like when the slugs they come from are valid. */
const FUNCTION_NAME = /^[a-z][a-z0-9-]*$/;
const QUEUE_NAME = /^[a-z][a-z0-9_]*$/;

/**
 * Checks the names of a worker function again before they become directory names, TOML keys
 * and source text: the builders check slugs, but a flow object can be forged past them (a
 * subclass overriding `steps`), and a slug such as `x/../../pwned` would write outside the
 * functions directory.
 *
 * @param spec The worker function.
 * @param modulePath The flows module, for the error.
 * @throws {CodegenError} `invalid_name`, naming the offending value.
 *
 * @example Usage
 * ```ts
 * import { assertSafeSpec } from "./plan.ts";
 *
 * assertSafeSpec({
 *   functionName: "orders",
 *   exportName: "orders",
 *   flowSlug: "orders",
 *   stepSlug: null,
 *   queueName: "orders",
 *   queueMode: "flow",
 *   alias: null,
 *   cohosted: false,
 * }, "flows.ts");
 * ```
 */
export function assertSafeSpec(spec: WorkerFunctionSpec, modulePath: string): void {
  const problems: [string, unknown, string | undefined][] = [
    ["flow slug", spec.flowSlug, slugProblem(spec.flowSlug)],
    ["step slug", spec.stepSlug, spec.stepSlug === null ? undefined : slugProblem(spec.stepSlug)],
    ["alias", spec.alias, spec.alias === null ? undefined : slugProblem(spec.alias)],
    [
      "function name",
      spec.functionName,
      FUNCTION_NAME.test(spec.functionName) ? undefined : "it must match [a-z][a-z0-9-]*",
    ],
    [
      "queue name",
      spec.queueName,
      QUEUE_NAME.test(spec.queueName) ? undefined : "it must match [a-z][a-z0-9_]*",
    ],
  ];
  for (const [what, value, problem] of problems) {
    if (problem === undefined) continue;
    throw new CodegenError(
      `Cannot generate worker functions: export ${spec.exportName} of ${
        JSON.stringify(modulePath)
      } has the ${what} ${JSON.stringify(value)}: ${problem}. Flows built with new Flow() and ` +
        "withStepQueues() never do; this flow object was altered after the builders checked it",
      {
        reason: "invalid_name",
        path: modulePath,
        flowSlug: String(spec.flowSlug),
        exportNames: [spec.exportName],
      },
    );
  }
}
