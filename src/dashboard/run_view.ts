/**
 * What the run page shows: a run (getRun), its flow's steps with their dependencies, and its
 * tasks summed per step.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { getRun, type RunState, type StepState } from "../client/get_run.ts";
import {
  type FlowStepRow,
  readFlowSteps,
  readStepTaskSummaries,
  type StepTaskSummaryRow,
} from "../db/dashboard_queries.ts";

/** One step of a run with its definition and its tasks summed. */
export interface RunStepView {
  /** The step's state in the run. */
  readonly state: StepState;
  /** The step's definition (type, dependencies, queue). */
  readonly definition: FlowStepRow;
  /** Its tasks summed, `null` before any task was queued. */
  readonly tasks: StepTaskSummaryRow | null;
}

/** A run with every step, in definition order. */
export interface RunView {
  /** The run as `getRun` reads it. */
  readonly run: RunState;
  /** Its steps. */
  readonly steps: readonly RunStepView[];
}

/**
 * Reads a run with its steps' definitions and task sums; `null` when no run has the id.
 *
 * @example Usage
 * ```ts ignore
 * import { readRunView } from "./run_view.ts";
 *
 * const view = await readRunView(sql, runId);
 * console.log(view?.steps.map((step) => step.state.status));
 * ```
 */
export async function readRunView(sql: Sql, runId: string): Promise<RunView | null> {
  const run = await getRun(sql, runId);
  if (run === null) return null;
  // Separate statements: task sums may be a report ahead of the step states; the next read agrees.
  const definitions = await readFlowSteps(sql, run.flowSlug);
  const summaries = await readStepTaskSummaries(sql, runId);
  const bySlug = new Map(definitions.map((step) => [step.step_slug, step]));
  const tasksBySlug = new Map(summaries.map((summary) => [summary.step_slug, summary]));
  return {
    run,
    steps: run.steps.map((state) => ({
      state,
      definition: bySlug.get(state.stepSlug)!,
      tasks: tasksBySlug.get(state.stepSlug) ?? null,
    })),
  };
}
