// Typed step workers: `stepSlug` is required for a step-queued flow and typed as its step-slug
// union, and rejected for a plain flow — by startWorker, createWorkerHandler, serveWorker and
// resolveWorkerTarget alike. Checked by `deno check tests/types/`, never run.

import {
  createWorkerHandler,
  serveWorker,
  type StepServeWorkerOptions,
  type StepWorkerFunctionOptions,
  type WorkerFunctionHandler,
  type WorkerServer,
} from "../../src/edge/mod.ts";
import {
  Flow,
  resolveWorkerTarget,
  startWorker,
  type StepQueuedFlow,
  type StepSlug,
  type StepWorkerOptions,
  withStepQueues,
  type WorkerHandle,
  type WorkerTarget,
} from "../../mod.ts";
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

// A slug known only as a string is not enough; a value of the union is.
declare const someString: string;
declare const someStep: StepSlug<typeof queued>;
// @ts-expect-error a string may name no step
startWorker(queued, { connectionString: url, stepSlug: someString });
startWorker(queued, { connectionString: url, stepSlug: someStep });

// The options type carries the exact union.
type StepSlugOption<Q extends StepQueuedFlow> = StepWorkerOptions<StepSlug<Q>>["stepSlug"];
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
  StepWorkerFunctionOptions<StepSlug<typeof queued>>["stepSlug"],
  "fetch" | "charge" | "notify"
> = true;
const _serveOptions: Equals<
  StepServeWorkerOptions<StepSlug<typeof queued>>["stepSlug"],
  "fetch" | "charge" | "notify"
> = true;

// A look-alike of a step-queued flow is no flow to any of them.
const lookAlike = { flow: plain, queueMode: "step" as const, routes: queued.routes };
// @ts-expect-error only withStepQueues() makes a StepQueuedFlow
startWorker(lookAlike, { connectionString: url, stepSlug: "fetch" });
// @ts-expect-error only withStepQueues() makes a StepQueuedFlow
serveWorker(lookAlike, { stepSlug: "fetch" });
