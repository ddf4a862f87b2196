// DeployedFlow keeps the wrapped flow's types: handler inputs and outputs, the step-slug union,
// every utility type; `stepSlug` is required exactly when the wrapped flow is step-queued;
// `activate` is only for a deployed flow's worker; startFlow types a deployed flow's input and
// runs on a transaction. Checked by `deno check tests/types/`, never run.

import {
  createWorkerHandler,
  serveWorker,
  type ServeWorkerOptions,
  type WorkerFunctionOptions,
} from "../../src/edge/mod.ts";
import {
  type AliasActivationMode,
  type AliasActivationResult,
  defineDeployedFlow,
  type DeployableFlow,
  type DeployedFlow,
  Flow,
  type FlowInput,
  type FlowOutput,
  type FlowSteps,
  getRun,
  getRunTasks,
  type LeafStepSlug,
  type PlainFlow,
  startFlow,
  startWorker,
  type StepInput,
  type StepOutput,
  type StepSlug,
  withStepQueues,
  type WorkerOptions,
} from "../../mod.ts";
import { resolveWorkerTarget } from "../../src/admin/mod.ts";
import type { Sql, TransactionSql } from "../../src/db/driver/postgres.ts";
import type { Equals } from "./_equals.ts";

declare const url: string;
declare const sql: Sql;
declare const tx: TransactionSql;

const ordersV2 = new Flow<{ id: number }>({ slug: "orders_v2" })
  .step({ slug: "fetch" }, (input) => ({ id: input.id, total: 10 }))
  .step({ slug: "charge", dependsOn: ["fetch"] }, (deps) => deps.fetch.total)
  .step({ slug: "notify", dependsOn: ["charge"] }, (deps) => `charged ${deps.charge}`);
const queued = withStepQueues(ordersV2);
const orders = defineDeployedFlow(ordersV2, { alias: "orders" });
const queuedOrders = defineDeployedFlow(queued, { alias: "orders" });

// The exact wrapped type and the alias literal.
const _wrapped: Equals<typeof orders, DeployedFlow<typeof ordersV2, "orders">> = true;
const _wrappedQueued: Equals<typeof queuedOrders.flow, typeof queued> = true;
const _deployable: DeployableFlow[] = [orders, queuedOrders];

// Utility types see through the alias, for both queue modes.
type D = typeof queuedOrders;
{
  const _plain: Equals<PlainFlow<D>, typeof ordersV2> = true;
  const _plainOfPlain: Equals<PlainFlow<typeof orders>, typeof ordersV2> = true;
  const _input: Equals<FlowInput<D>, { id: number }> = true;
  const _output: Equals<FlowOutput<D>, { notify: string }> = true;
  const _slugs: Equals<StepSlug<D>, "fetch" | "charge" | "notify"> = true;
  const _leaf: Equals<LeafStepSlug<typeof orders>, "notify"> = true;
  const _stepIn: Equals<StepInput<D, "charge">, { fetch: { id: number; total: number } }> = true;
  const _stepOut: Equals<StepOutput<typeof orders, "charge">, number> = true;
  const _steps: Equals<FlowSteps<D>, FlowSteps<typeof ordersV2>> = true;
}

// Handler inference is exact for a flow built inline inside defineDeployedFlow.
defineDeployedFlow(
  new Flow<{ n: number }>({ slug: "inline_v2" })
    .step({ slug: "double" }, (input) => {
      const _input: Equals<typeof input, { n: number }> = true;
      return input.n * 2;
    })
    .step({ slug: "label", dependsOn: ["double"] }, (deps) => {
      const _deps: Equals<typeof deps, { double: number }> = true;
      return `${deps.double}`;
    }),
  { alias: "inline" },
);

// A deployed flow cannot be deployed again, nor get step queues afterwards.
// @ts-expect-error wrap the concrete flow
defineDeployedFlow(orders, { alias: "again" });
// @ts-expect-error step queues go on the concrete flow, before defineDeployedFlow
withStepQueues(orders);

// Workers: stepSlug required (and typed) for a deployed step-queued flow ...
startWorker(queuedOrders, { connectionString: url, stepSlug: "charge" });
// @ts-expect-error a deployed step-queued flow's worker needs a stepSlug
startWorker(queuedOrders, { connectionString: url });
// @ts-expect-error "ship" is not a step of the flow
startWorker(queuedOrders, { connectionString: url, stepSlug: "ship" });
// ... and rejected for a deployed plain flow.
startWorker(orders, { connectionString: url });
// @ts-expect-error a plain flow's worker runs every step
startWorker(orders, { connectionString: url, stepSlug: "fetch" });

// activate: only a deployed flow's worker, only the two modes.
startWorker(orders, { connectionString: url, activate: "on-startup" });
startWorker(queuedOrders, { connectionString: url, stepSlug: "fetch", activate: "manual" });
// @ts-expect-error not an activation mode
startWorker(orders, { connectionString: url, activate: "always" });
// @ts-expect-error a concrete flow has no alias to activate
startWorker(ordersV2, { connectionString: url, activate: "on-startup" });
// @ts-expect-error a concrete step-queued flow has no alias to activate
startWorker(queued, { connectionString: url, stepSlug: "fetch", activate: "on-startup" });
createWorkerHandler(queuedOrders, { stepSlug: "notify", activate: "on-startup" });
// @ts-expect-error a deployed step-queued flow's handler needs a stepSlug
createWorkerHandler(queuedOrders, { activate: "on-startup" });
// @ts-expect-error a concrete flow has no alias to activate
createWorkerHandler(ordersV2, { activate: "on-startup" });
serveWorker(orders, { activate: "on-startup" });
serveWorker(queuedOrders, { stepSlug: "fetch" });
// @ts-expect-error a concrete flow has no alias to activate
serveWorker(ordersV2, { activate: "manual" });
resolveWorkerTarget(queuedOrders, { stepSlug: "fetch", activate: "on-startup" });
// @ts-expect-error a deployed step-queued flow's target needs a stepSlug
resolveWorkerTarget(queuedOrders);

// The options types are keyed on the deployed flow as on the flow it wraps.
{
  const _slug: Equals<
    WorkerOptions<typeof queuedOrders>["stepSlug"],
    "fetch" | "charge" | "notify"
  > = true;
  const _serveSlug: Equals<
    ServeWorkerOptions<typeof queuedOrders>["stepSlug"],
    "fetch" | "charge" | "notify"
  > = true;
  const _noSlug: Equals<WorkerFunctionOptions<typeof orders>["stepSlug"], undefined> = true;
  const _activate: Equals<
    WorkerOptions<typeof orders>["activate"],
    AliasActivationMode | undefined
  > = true;
  const _noActivate: Equals<WorkerOptions<typeof queued>["activate"], undefined> = true;
}

// The handle reports the activation.
export async function activation(): Promise<AliasActivationResult | null> {
  return (await startWorker(orders, { connectionString: url })).aliasActivation;
}

// startFlow: a deployed flow's input is typed; a transaction is accepted.
startFlow(sql, orders, { id: 1 });
startFlow(tx, queuedOrders, { id: 1 });
startFlow(tx, ordersV2, { id: 1 });
startFlow(tx, "orders", { anything: ["json"] });
// @ts-expect-error the deployed flow's input is { id: number }
startFlow(sql, orders, { id: "1" });
// @ts-expect-error the deployed flow's input is { id: number }
startFlow(tx, queuedOrders, { orderId: 1 });
getRun(tx, crypto.randomUUID());
getRunTasks(tx, crypto.randomUUID());
