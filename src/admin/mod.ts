/**
 * Operating sluice and building tools on it: compiling flows ahead of workers, aliases and
 * version drains, schedules, bulk cancels, and the pure naming and definition functions the
 * generators and the CLI use. Producers and workers need none of it: they import
 * `@sluice/sluice`.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { compileFlow, schedule, stepQueueName } from "@sluice/sluice/admin";
 * import { connect } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const flow = new Flow({ slug: "nightly" }).step({ slug: "report" }, () => "done");
 * await compileFlow(sql, flow);
 * await schedule(sql, flow, { name: "nightly", cron: "0 3 * * *" });
 * console.log(stepQueueName("nightly", "report", 0));
 * ```
 *
 * @module
 */

export * from "../deploy/aliases.ts";
export { AliasConflictError, AliasWorkersMissingError } from "../deploy/errors.ts";
export type { CompileFlowOptions, CompileOutcome, CompileResult } from "../deploy/compile_types.ts";
export { compileFlow } from "../client/compile_flow.ts";
export { grantAccess, GrantAccessError, type GrantAccessOptions } from "../client/grant_access.ts";
export { cancelRuns, type CancelRunsOptions, type CancelRunsResult } from "../client/cancel_run.ts";
export * from "../client/schedule_errors.ts";
export * from "../client/schedules.ts";
export {
  type DueTimes,
  InvalidCronError,
  InvalidTimezoneError,
  scheduleDueTimes,
  validateSchedule,
} from "../dsl/schedule_times.ts";
export {
  extractDefinition,
  type FlowDefinition,
  type FlowDefinitionOptions,
  type FlowDefinitionRoute,
  type FlowDefinitionStep,
  servedStepSlugs,
  type StepDefinitionOptions,
  type SubflowDefinitionOptions,
  type TaskDefinitionOptions,
  type WaitDefinitionOptions,
} from "../dsl/definition.ts";
export { aliasOf, isDeployedFlow } from "../dsl/deployed_flow.ts";
export { isStepQueuedFlow } from "../dsl/step_queues.ts";
export { workerFunctionName } from "../dsl/function_name.ts";
export {
  flowQueueName,
  isValidQueueName,
  MAX_QUEUE_NAME_LENGTH,
  stepQueueName,
  stepQueueNames,
} from "../dsl/queue_name.ts";
export { MAX_SLUG_LENGTH, RESERVED_STEP_SLUGS, slugProblem } from "../dsl/slug.ts";
export { resolveWorkerTarget, type WorkerTarget } from "../worker/worker_target.ts";
