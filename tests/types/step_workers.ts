// Typed step workers: `stepSlug` is required for a step-queued flow and typed as its step-slug
// union, and rejected for a plain flow — by startWorker, createWorkerHandler, serveWorker and
// resolveWorkerTarget alike, each through one signature whose options type is keyed on the flow.
// Checked by `deno check tests/types/`, never run.

import {
  createWorkerHandler,
  serveWorker,
  type ServeWorkerOptions,
  type WorkerFunctionHandler,
  type WorkerFunctionOptions,
  type WorkerServer,
} from "../../src/edge/mod.ts";
import {
  type DeployableFlow,
  Flow,
  type FlowOptionsArgument,
  startWorker,
  type StepQueuedFlow,
  type StepSlug,
  withStepQueues,
  type WorkerHandle,
  type WorkerOptions,
  type WorkerTargetOptions,
} from "../../mod.ts";
import { resolveWorkerTarget, type WorkerTarget } from "../../src/admin/mod.ts";
import type { Equals } from "./_equals.ts";

declare const url: string;

const plain = new Flow<{ id: number }>({ slug: "orders" })
  .step({ slug: "fetch" }, (input) => ({ id: input.id, total: 10 }))
  .step({ slug: "charge", dependsOn: ["fetch"] }, (deps) => deps.fetch.total)
  .step({ slug: "notify", dependsOn: ["charge"] }, (deps) => `charged ${deps.charge}`);
const queued = withStepQueues(plain);

// startWorker: the step-slug union, required.
export const fetchWorker: Promise<WorkerHandle> = startWorker(queued, {
  connectionString: url,
  stepSlug: "fetch",
});
// @ts-expect-error a step-queued flow's worker needs a stepSlug
startWorker(queued, { connectionString: url });
// @ts-expect-error "ship" is not a step of the flow
startWorker(queued, { connectionString: url, stepSlug: "ship" });
// @ts-expect-error step slugs are case-sensitive
startWorker(queued, { connectionString: url, stepSlug: "Fetch" });
// @ts-expect-error a plain flow's worker runs every step and takes no stepSlug
startWorker(plain, { connectionString: url, stepSlug: "fetch" });
// A plain flow's worker is unchanged.
export const plainWorker: Promise<WorkerHandle> = startWorker(plain, { connectionString: url });
// Options may be omitted where nothing is required (the URL then comes from the environment), as
// for serveWorker and createWorkerHandler; never for a step-queued flow.
export const envWorker: Promise<WorkerHandle> = startWorker(plain);
// @ts-expect-error a step-queued flow's worker needs its options, with a stepSlug
startWorker(queued);

// A slug known only as a string is not enough; a value of the union is.
declare const someString: string;
declare const someStep: StepSlug<typeof queued>;
// @ts-expect-error a string may name no step
startWorker(queued, { connectionString: url, stepSlug: someString });
startWorker(queued, { connectionString: url, stepSlug: someStep });

// The options type carries the exact union.
type StepSlugOption<Q extends StepQueuedFlow> = WorkerOptions<Q>["stepSlug"];
const _union: Equals<StepSlugOption<typeof queued>, "fetch" | "charge" | "notify"> = true;

// Handler inference is exact for a flow built inline, inside the wrapper and the worker call.
startWorker(
  withStepQueues(
    new Flow<{ n: number }>({ slug: "inline" })
      .step({ slug: "double" }, (input) => {
        const _input: Equals<typeof input, { n: number }> = true;
        return input.n * 2;
      })
      .step({ slug: "label", dependsOn: ["double"] }, (deps, context) => {
        const _deps: Equals<typeof deps, { double: number }> = true;
        const _step: Equals<typeof context.stepSlug, "label"> = true;
        return `${context.flowInput.n}`;
      }),
  ),
  { connectionString: url, stepSlug: "label" },
);

// resolveWorkerTarget follows the same rules.
export const target: WorkerTarget = resolveWorkerTarget(queued, { stepSlug: "charge" });
resolveWorkerTarget(plain);
// @ts-expect-error a step-queued flow's target needs a stepSlug
resolveWorkerTarget(queued, {});
// @ts-expect-error a step-queued flow's target needs options with a stepSlug
resolveWorkerTarget(queued);
// @ts-expect-error a plain flow's target takes no stepSlug
resolveWorkerTarget(plain, { stepSlug: "fetch" });

// createWorkerHandler: the same overloads.
export const handler: WorkerFunctionHandler = createWorkerHandler(queued, { stepSlug: "notify" });
createWorkerHandler(plain);
createWorkerHandler(plain, { functionName: "orders" });
// @ts-expect-error a step-queued flow's handler needs a stepSlug
createWorkerHandler(queued);
// @ts-expect-error a step-queued flow's handler needs a stepSlug
createWorkerHandler(queued, { functionName: "orders--fetch" });
// @ts-expect-error "ship" is not a step of the flow
createWorkerHandler(queued, { stepSlug: "ship" });
// @ts-expect-error a plain flow's handler takes no stepSlug
createWorkerHandler(plain, { stepSlug: "fetch" });

// serveWorker: the same overloads, plus where to listen.
export const served: WorkerServer = serveWorker(queued, { stepSlug: "fetch", port: 0 });
serveWorker(plain, { port: 0 });
// @ts-expect-error a step-queued flow's function needs a stepSlug
serveWorker(queued);
// @ts-expect-error a step-queued flow's function needs a stepSlug
serveWorker(queued, { port: 0 });
// @ts-expect-error "ship" is not a step of the flow
serveWorker(queued, { stepSlug: "ship" });
// @ts-expect-error a plain flow's function takes no stepSlug
serveWorker(plain, { stepSlug: "fetch" });

const _handlerOptions: Equals<
  WorkerFunctionOptions<typeof queued>["stepSlug"],
  "fetch" | "charge" | "notify"
> = true;
const _serveOptions: Equals<
  ServeWorkerOptions<typeof queued>["stepSlug"],
  "fetch" | "charge" | "notify"
> = true;
// A plain flow's options have no stepSlug to give.
const _plainSlug: Equals<WorkerOptions<typeof plain>["stepSlug"], undefined> = true;
const _plainHandlerSlug: Equals<WorkerFunctionOptions<typeof plain>["stepSlug"], undefined> = true;
const _plainServeSlug: Equals<ServeWorkerOptions<typeof plain>["stepSlug"], undefined> = true;
const _targetSlug: Equals<WorkerTargetOptions<typeof queued>["stepSlug"], StepSlug<typeof queued>> =
  true;

// One signature per entry point: no overloads left to pick from.
type Signatures<T> = T extends {
  (...args: infer A1): unknown;
  (...args: infer A2): unknown;
} ? [A1, A2] extends [A2, A1] ? 1 : 2
  : 0;
const _oneStart: Signatures<typeof startWorker> = 1;
const _oneHandler: Signatures<typeof createWorkerHandler> = 1;
const _oneServe: Signatures<typeof serveWorker> = 1;
const _oneTarget: Signatures<typeof resolveWorkerTarget> = 1;

// The options argument is optional exactly when no stepSlug is needed.
const _optional: Equals<
  FlowOptionsArgument<typeof plain, WorkerTargetOptions<typeof plain>>,
  [options?: WorkerTargetOptions<typeof plain>]
> = true;
const _required: Equals<
  FlowOptionsArgument<typeof queued, WorkerTargetOptions<typeof queued>>,
  [options: WorkerTargetOptions<typeof queued>]
> = true;

// The default flow type is every kind at once: code holding a flow of unknown kind (a CLI, a
// registry of flows) passes its options without casting, and the values are checked at run time.
declare const someFlow: DeployableFlow;
declare const someOptions: WorkerOptions;
declare const someFunctionOptions: WorkerFunctionOptions;
startWorker(someFlow, someOptions);
createWorkerHandler(someFlow, someFunctionOptions);
resolveWorkerTarget(someFlow, someOptions);
startWorker(someFlow, { connectionString: url, stepSlug: someString });
startWorker(someFlow, { connectionString: url });

// A look-alike of a step-queued flow is no flow to any of them.
const lookAlike = { flow: plain, queueMode: "step" as const, routes: queued.routes };
// @ts-expect-error only withStepQueues() makes a StepQueuedFlow
startWorker(lookAlike, { connectionString: url, stepSlug: "fetch" });
// @ts-expect-error only withStepQueues() makes a StepQueuedFlow
serveWorker(lookAlike, { stepSlug: "fetch" });
