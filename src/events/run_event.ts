/**
 * The live events of a run (docs/events.md): one type for every transport (NOTIFY, Supabase
 * Realtime) and for the replay of a run's state, typed by the run's flow.
 *
 * @module
 */

import type { Json } from "../dsl/json.ts";
import type { DeployableFlow, FlowOutput, StepOutput, StepSlug } from "../dsl/types.ts";

/**
 * Why a step was skipped: its condition was unmet, its retries ran out (`whenExhausted: "skip"`),
 * a dependency was skipped, or a signal wait timed out (`onTimeout: "skip"`, docs/waits.md).
 *
 * @example Usage
 * ```ts
 * import type { SkipReason } from "@sluice/sluice";
 *
 * const reason: SkipReason = "condition_unmet";
 * ```
 */
export type SkipReason =
  | "condition_unmet"
  | "retries_exhausted"
  | "dependency_skipped"
  | "wait_timed_out";

/**
 * What every event carries: its run and when the change was made (ISO 8601: the database's
 * `now()`, the start of the transaction that made it).
 *
 * @example Usage
 * ```ts
 * import type { RunEventBase } from "@sluice/sluice";
 *
 * const base: RunEventBase = { runId: "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11", at: "2026-12-01T00:00:00+00:00" };
 * ```
 */
export interface RunEventBase {
  /** The run. */
  readonly runId: string;
  /** When the change was made. */
  readonly at: string;
}

/**
 * Where a subflow child run sits in its parent (docs/subflows.md): the parent run, its subflow
 * step, and the child's index (a map subflow's element; 0 for a subflow).
 *
 * @typeParam Slug The parent flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { RunParent } from "@sluice/sluice";
 *
 * const where = (parent: RunParent) => `${parent.runId} ${parent.stepSlug}[${parent.index}]`;
 * ```
 */
export interface RunParent<Slug extends string = string> {
  /** The parent run. */
  readonly runId: string;
  /** The parent's subflow step that started this run. */
  readonly stepSlug: Slug;
  /** The element of a map subflow this run is the child of; 0 for a subflow. */
  readonly index: number;
}

/**
 * The run started (its root steps start in the same transaction).
 *
 * @example Usage
 * ```ts
 * import type { RunStartedEvent } from "@sluice/sluice";
 *
 * const isStart = (event: { type: string }): event is RunStartedEvent => event.type === "run:started";
 * ```
 */
export interface RunStartedEvent extends RunEventBase {
  /** Discriminant. */
  readonly type: "run:started";
  /** The concrete flow of the run. */
  readonly flowSlug: string;
  /**
   * A subflow child's parent (docs/subflows.md); absent for a run started by a producer. Read
   * from the run's state, as `watchRun()` and the browser client deliver run:started: the raw
   * NOTIFY of a child's run:started, sent as the run is created, before its parent links it, has
   * none.
   */
  readonly parent?: RunParent;
}

/**
 * The run completed: the last event of the run.
 *
 * @typeParam Output The run output: the outputs of its completed leaf steps, by slug.
 *
 * @example Usage
 * ```ts
 * import type { RunCompletedEvent } from "@sluice/sluice";
 *
 * const done = (event: RunCompletedEvent<{ total: number }>) => event.output.total;
 * ```
 */
export interface RunCompletedEvent<Output = Json> extends RunEventBase {
  /** Discriminant. */
  readonly type: "run:completed";
  /** The concrete flow of the run. */
  readonly flowSlug: string;
  /** The run output. */
  readonly output: Output;
}

/**
 * The run failed: the last event of the run.
 *
 * @typeParam Slug The flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { RunFailedEvent } from "@sluice/sluice";
 *
 * const why = (event: RunFailedEvent) => `${event.stepSlug}: ${event.errorMessage}`;
 * ```
 */
export interface RunFailedEvent<Slug extends string = string> extends RunEventBase {
  /** Discriminant. */
  readonly type: "run:failed";
  /** The concrete flow of the run. */
  readonly flowSlug: string;
  /** The step that failed the run (`null` if none is recorded). */
  readonly stepSlug: Slug | null;
  /** Why. */
  readonly errorMessage: string;
}

/**
 * The run was cancelled (`cancelRun`): the last event of the run, after `step:cancelled` of each
 * step that had not finished.
 *
 * @example Usage
 * ```ts
 * import type { RunCancelledEvent } from "@sluice/sluice";
 *
 * const why = (event: RunCancelledEvent) => event.reason ?? "no reason given";
 * ```
 */
export interface RunCancelledEvent extends RunEventBase {
  /** Discriminant. */
  readonly type: "run:cancelled";
  /** The concrete flow of the run. */
  readonly flowSlug: string;
  /** The reason given to the cancel. */
  readonly reason: string | null;
  /** The database role that cancelled it. */
  readonly cancelledBy: string;
}

/**
 * A failed or cancelled run was retried (`retryRun`) and goes on: `step:started` follows for each
 * step that starts again, and the run ends with another terminal event.
 *
 * @example Usage
 * ```ts
 * import type { RunRetriedEvent } from "@sluice/sluice";
 *
 * const round = (event: RunRetriedEvent) => event.retryCount;
 * ```
 */
export interface RunRetriedEvent extends RunEventBase {
  /** Discriminant. */
  readonly type: "run:retried";
  /** The concrete flow of the run. */
  readonly flowSlug: string;
  /** How often the run has been retried, this retry included. */
  readonly retryCount: number;
  /** The database role that retried it. */
  readonly retriedBy: string;
}

/**
 * A step started: its tasks are queued.
 *
 * @typeParam Slug The flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { StepStartedEvent } from "@sluice/sluice";
 *
 * const size = (event: StepStartedEvent) => event.tasks;
 * ```
 */
export interface StepStartedEvent<Slug extends string = string> extends RunEventBase {
  /** Discriminant. */
  readonly type: "step:started";
  /** The step. */
  readonly stepSlug: Slug;
  /** How many tasks it has (a map: one per element). */
  readonly tasks: number;
}

/**
 * A wait step (`.sleep()` or `.waitForSignal()`, docs/waits.md) started waiting in the database:
 * its dependency completed and gave it its key or due time. `step:completed` follows when a signal
 * with the key comes or the due time passes (when a signal wait times out: `step:completed` with
 * its timeout value, `step:skipped` or `step:failed`, as its `onTimeout` says). A wait step has
 * no `step:started`: it has no task. `at` is when it started waiting.
 *
 * @typeParam Slug The flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { StepWaitingEvent } from "@sluice/sluice";
 *
 * const what = (event: StepWaitingEvent) =>
 *   event.key === null ? `sleeping until ${event.until}` : `waiting for signal ${event.key}`;
 * ```
 */
export interface StepWaitingEvent<Slug extends string = string> extends RunEventBase {
  /** Discriminant. */
  readonly type: "step:waiting";
  /** The step. */
  readonly stepSlug: Slug;
  /** A signal wait's key (`sendSignal` with this key releases it); `null` for a sleep. */
  readonly key: string | null;
  /**
   * When a sleep is due, or when a signal wait times out (ISO 8601); `null` for a signal wait
   * without a timeout.
   */
  readonly until: string | null;
}

/**
 * Tasks of a started step are done: at most one per the flow's `progressInterval`, never for
 * the task that completes the step.
 *
 * @typeParam Slug The flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { StepProgressEvent } from "@sluice/sluice";
 *
 * const percent = (event: StepProgressEvent) => Math.round((100 * event.done) / event.total);
 * ```
 */
export interface StepProgressEvent<Slug extends string = string> extends RunEventBase {
  /** Discriminant. */
  readonly type: "step:progress";
  /** The step. */
  readonly stepSlug: Slug;
  /** Tasks completed. */
  readonly done: number;
  /** Tasks of the step. */
  readonly total: number;
}

/**
 * A step completed.
 *
 * @typeParam Slug The step's slug.
 * @typeParam Output The step's output (a map step: the array of its tasks' outputs).
 *
 * @example Usage
 * ```ts
 * import type { StepCompletedEvent } from "@sluice/sluice";
 *
 * const total = (event: StepCompletedEvent<"sum", number>) => event.output;
 * ```
 */
export interface StepCompletedEvent<Slug extends string = string, Output = Json>
  extends RunEventBase {
  /** Discriminant. */
  readonly type: "step:completed";
  /** The step. */
  readonly stepSlug: Slug;
  /** The step's output. */
  readonly output: Output;
}

/**
 * A step failed and, with it, the run (`run:failed` follows).
 *
 * @typeParam Slug The flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { StepFailedEvent } from "@sluice/sluice";
 *
 * const why = (event: StepFailedEvent) => event.errorMessage;
 * ```
 */
export interface StepFailedEvent<Slug extends string = string> extends RunEventBase {
  /** Discriminant. */
  readonly type: "step:failed";
  /** The step. */
  readonly stepSlug: Slug;
  /** Why. */
  readonly errorMessage: string;
}

/**
 * A step was skipped.
 *
 * @typeParam Slug The flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { StepSkippedEvent } from "@sluice/sluice";
 *
 * const why = (event: StepSkippedEvent) => event.reason;
 * ```
 */
export interface StepSkippedEvent<Slug extends string = string> extends RunEventBase {
  /** Discriminant. */
  readonly type: "step:skipped";
  /** The step. */
  readonly stepSlug: Slug;
  /** Why. */
  readonly reason: SkipReason;
  /** The last task error when the reason is `retries_exhausted`, else `null`. */
  readonly errorMessage: string | null;
}

/**
 * A step was cancelled: another step failed the run, or the run was cancelled.
 *
 * @typeParam Slug The flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { StepCancelledEvent } from "@sluice/sluice";
 *
 * const slug = (event: StepCancelledEvent) => event.stepSlug;
 * ```
 */
export interface StepCancelledEvent<Slug extends string = string> extends RunEventBase {
  /** Discriminant. */
  readonly type: "step:cancelled";
  /** The step. */
  readonly stepSlug: Slug;
}

/**
 * What every event of a subflow child carries in its parent's stream (docs/subflows.md#events):
 * `runId` is the PARENT run; the child is `childRunId`.
 *
 * @typeParam Slug The parent flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { ChildEventBase } from "@sluice/sluice";
 *
 * const label = (event: ChildEventBase) => `${event.stepSlug}[${event.index}] ${event.childRunId}`;
 * ```
 */
export interface ChildEventBase<Slug extends string = string> extends RunEventBase {
  /** The parent's subflow step. */
  readonly stepSlug: Slug;
  /** The child's element of a map subflow; 0 for a subflow. */
  readonly index: number;
  /** The child run (`watchRun()` of it follows its own events). */
  readonly childRunId: string;
  /** The child run's concrete flow. */
  readonly flowSlug: string;
}

/**
 * A subflow step started a child run (after the step's `step:waiting`, in the same
 * transaction; a retry of the parent retries the children it had and starts none).
 *
 * @typeParam Slug The parent flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { ChildStartedEvent } from "@sluice/sluice";
 *
 * const child = (event: ChildStartedEvent) => event.childRunId;
 * ```
 */
export interface ChildStartedEvent<Slug extends string = string> extends ChildEventBase<Slug> {
  /** Discriminant. */
  readonly type: "child:started";
}

/**
 * A child run completed (its output is in the parent step's `step:completed`, once every child
 * has; `at` is the child's completion, before that step's end).
 *
 * @typeParam Slug The parent flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { ChildCompletedEvent } from "@sluice/sluice";
 *
 * const done = (event: ChildCompletedEvent) => event.index;
 * ```
 */
export interface ChildCompletedEvent<Slug extends string = string> extends ChildEventBase<Slug> {
  /** Discriminant. */
  readonly type: "child:completed";
}

/**
 * A child run failed: the parent step fails with it (`step:failed`, `run:failed` follow).
 *
 * @typeParam Slug The parent flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { ChildFailedEvent } from "@sluice/sluice";
 *
 * const why = (event: ChildFailedEvent) => event.errorMessage;
 * ```
 */
export interface ChildFailedEvent<Slug extends string = string> extends ChildEventBase<Slug> {
  /** Discriminant. */
  readonly type: "child:failed";
  /** The child run's error. */
  readonly errorMessage: string;
}

/**
 * A child run was cancelled: with its parent, or alone (which fails the parent step).
 *
 * @typeParam Slug The parent flow's step slugs.
 *
 * @example Usage
 * ```ts
 * import type { ChildCancelledEvent } from "@sluice/sluice";
 *
 * const child = (event: ChildCancelledEvent) => event.childRunId;
 * ```
 */
export interface ChildCancelledEvent<Slug extends string = string> extends ChildEventBase<Slug> {
  /** Discriminant. */
  readonly type: "child:cancelled";
}

/**
 * The step slugs of a flow type, or `string` when no flow type is known.
 *
 * @typeParam F A flow type, or `never`.
 *
 * @example Usage
 * ```ts
 * import type { EventStepSlug } from "@sluice/sluice";
 *
 * const slug: EventStepSlug<never> = "any";
 * ```
 */
export type EventStepSlug<F extends DeployableFlow> = [F] extends [never] ? string : StepSlug<F>;

/**
 * `step:completed` of each step of a flow, with that step's output type.
 *
 * @typeParam F A flow type, or `never` (any step, JSON output).
 *
 * @example Usage
 * ```ts
 * import type { StepCompletedEventOf } from "@sluice/sluice";
 *
 * const untyped: StepCompletedEventOf<never>["output"] = null;
 * ```
 */
export type StepCompletedEventOf<F extends DeployableFlow> = [F] extends [never]
  ? StepCompletedEvent<string, Json>
  : { [S in StepSlug<F>]: StepCompletedEvent<S, StepOutput<F, S>> }[StepSlug<F>];

/**
 * Every event of a run of flow `F`, discriminated by `type`: step slugs and outputs typed by the
 * flow (untyped JSON when `F` is `never`).
 *
 * @typeParam F The run's flow type, or `never`.
 *
 * @example Usage
 * ```ts
 * import { Flow, type RunEvent } from "@sluice/sluice";
 *
 * const flow = new Flow<{ n: number }>({ slug: "math" })
 *   .step({ slug: "double" }, (input) => input.n * 2);
 * function show(event: RunEvent<typeof flow>): string {
 *   if (event.type === "step:completed") return `double = ${event.output}`;
 *   return event.type;
 * }
 * ```
 */
export type RunEvent<F extends DeployableFlow = never> =
  | RunStartedEvent
  | RunCompletedEvent<[F] extends [never] ? Json : FlowOutput<F>>
  | RunFailedEvent<EventStepSlug<F>>
  | RunCancelledEvent
  | RunRetriedEvent
  | StepStartedEvent<EventStepSlug<F>>
  | StepWaitingEvent<EventStepSlug<F>>
  | StepProgressEvent<EventStepSlug<F>>
  | StepCompletedEventOf<F>
  | StepFailedEvent<EventStepSlug<F>>
  | StepSkippedEvent<EventStepSlug<F>>
  | StepCancelledEvent<EventStepSlug<F>>
  | ChildStartedEvent<EventStepSlug<F>>
  | ChildCompletedEvent<EventStepSlug<F>>
  | ChildFailedEvent<EventStepSlug<F>>
  | ChildCancelledEvent<EventStepSlug<F>>;

/**
 * A field a transport may leave out of an event: what the run computed (`output`,
 * `errorMessage`) and what a person typed or is (a wait's `key`, a cancel's `reason`,
 * `cancelledBy`, `retriedBy`).
 */
export type OmittedEventField =
  | "output"
  | "errorMessage"
  | "key"
  | "reason"
  | "cancelledBy"
  | "retriedBy";

/**
 * An event as a transport carries it: NOTIFY always leaves out its output, error text, wait key,
 * cancel reason and the roles that cancelled or retried it (any role may LISTEN), a Realtime
 * broadcast only its output and error text when the event is too large (8,000 bytes), and either
 * names them in `omitted`; `watchRun()` and the browser client read those back before they hand
 * the event on.
 *
 * @example Usage
 * ```ts
 * import type { RunEventPayload } from "@sluice/sluice";
 *
 * const large: RunEventPayload = {
 *   type: "step:completed",
 *   runId: "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11",
 *   stepSlug: "blob",
 *   at: "2026-12-01T00:00:00+00:00",
 *   omitted: ["output"],
 * };
 * ```
 */
export type RunEventPayload =
  & { readonly type: RunEvent["type"]; readonly runId: string; readonly at: string }
  & { readonly omitted?: readonly OmittedEventField[] }
  & Readonly<Record<string, Json | undefined>>;

/**
 * A run together with its flow, so that events are typed without naming the flow again.
 *
 * @typeParam F The run's flow type.
 *
 * @example Usage
 * ```ts
 * import { Flow, type RunHandle } from "@sluice/sluice";
 *
 * const flow = new Flow<{ n: number }>({ slug: "math" }).step({ slug: "double" }, (i) => i.n * 2);
 * const handle: RunHandle<typeof flow> = { runId: "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11", flow };
 * ```
 */
export interface RunHandle<F extends DeployableFlow> {
  /** The run id. */
  readonly runId: string;
  /** The run's flow (only its type is used). */
  readonly flow: F;
}

/**
 * Whether an event is a run's last (`run:completed`, `run:failed` or `run:cancelled`). A failed
 * or cancelled run that is retried later goes on with `run:retried`.
 *
 * @param event An event.
 * @returns `true` for a terminal event.
 *
 * @example Usage
 * ```ts
 * import { isTerminalRunEvent } from "@sluice/sluice";
 *
 * console.log(isTerminalRunEvent({ type: "run:started" })); // false
 * ```
 */
export function isTerminalRunEvent(event: { readonly type: string }): boolean {
  return event.type === "run:completed" || event.type === "run:failed" ||
    event.type === "run:cancelled";
}

/**
 * The NOTIFY channel of a run: `sluice_run_` and the run id without dashes (the same as SQL
 * `sluice.run_channel(run_id)`).
 *
 * @param runId The run id (a UUID).
 * @returns The channel name.
 *
 * @example Usage
 * ```ts
 * import { runChannel } from "@sluice/sluice/browser";
 *
 * console.log(runChannel("6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11"));
 * // sluice_run_6f1c0c2e8f5e4a439d432f7f6a0f0d11
 * ```
 */
export function runChannel(runId: string): string {
  return `sluice_run_${runId.toLowerCase().replaceAll("-", "")}`;
}

/**
 * The Supabase Realtime topic of a run: `sluice:run:` and the run id (the same as SQL
 * `sluice.run_topic(run_id)`).
 *
 * @param runId The run id (a UUID).
 * @returns The topic.
 *
 * @example Usage
 * ```ts
 * import { runTopic } from "@sluice/sluice/browser";
 *
 * console.log(runTopic("6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11"));
 * // sluice:run:6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11
 * ```
 */
export function runTopic(runId: string): string {
  return `sluice:run:${runId.toLowerCase()}`;
}
