/**
 * The producer client: a connection configured for sluice, startup compilation, starting runs
 * and reading or awaiting their results.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { connect, startFlow, waitForRun } from "@sluice/sluice/client";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const flow = new Flow<{ n: number }>({ slug: "math" })
 *   .step({ slug: "double" }, (input) => input.n * 2);
 * const runId = await startFlow(sql, flow, { n: 21 });
 * console.log(await waitForRun(sql, runId, { timeoutMs: 10_000, flow })); // { double: 42 }
 * ```
 *
 * @module
 */

export { cancelRun, type CancelRunOptions, type CancelRunResult } from "./cancel_run.ts";
export {
  connect,
  type ConnectOptions,
  TlsUpgradeError,
  type TlsUpgradeFailure,
} from "../db/connect.ts";
export * from "./errors.ts";
export {
  FlowShapeMismatchError,
  RecompileInFlightError,
  SluiceNotInstalledError,
  type WaitingStep,
} from "../deploy/errors.ts";
export type { CompileEnvironment } from "../deploy/compile_types.ts";
export * from "./get_run.ts";
export * from "./get_run_tasks.ts";
export * from "./retry_run.ts";
export * from "./send_signal.ts";
export { startFlow, type StartFlowOptions } from "./start_flow.ts";
export {
  type DebounceOptions,
  type FlowControlStartOptions,
  IdempotencyConflictError,
  MAX_DEBOUNCE_SECONDS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_PRIORITY,
  StartOptionError,
} from "../dsl/start_options.ts";
export * from "./wait_for_run.ts";
export * from "./watch_run.ts";
export {
  type ChildCancelledEvent,
  type ChildCompletedEvent,
  type ChildEventBase,
  type ChildFailedEvent,
  type ChildStartedEvent,
  type EventStepSlug,
  isTerminalRunEvent,
  type OmittedEventField,
  type RunCancelledEvent,
  type RunCompletedEvent,
  type RunEvent,
  type RunEventBase,
  type RunEventPayload,
  type RunFailedEvent,
  type RunHandle,
  type RunParent,
  type RunRetriedEvent,
  type RunStartedEvent,
  type SkipReason,
  type StepCancelledEvent,
  type StepCompletedEvent,
  type StepCompletedEventOf,
  type StepFailedEvent,
  type StepProgressEvent,
  type StepSkippedEvent,
  type StepStartedEvent,
  type StepWaitingEvent,
} from "../events/run_event.ts";
