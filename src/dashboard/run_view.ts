/**
 * What the run page shows: a run (getRun), its flow's steps with their dependencies, its tasks
 * summed per step, its subflow parent and children (docs/subflows.md), and its tasks' times for
 * the timeline.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { getRun, type RunState, type StepState } from "../client/get_run.ts";
import {
  type FlowStepRow,
  readFlowSteps,
  readRunTimeline,
  readStepTaskSummaries,
  type StepTaskSummaryRow,
  type TimelineTaskRow,
} from "../db/dashboard_queries.ts";
import { readSubflowLinks, type SubflowLinkRow } from "../db/ops_queries.ts";

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
  /** The run whose subflow step started it, or `null`. */
  readonly parent: SubflowLinkRow | null;
  /** The runs its subflow steps started, by step and element index. */
  readonly children: readonly SubflowLinkRow[];
  /** Its tasks for the timeline (at most a few per step) and the database's time now. */
  readonly timeline: { readonly now: Date; readonly tasks: readonly TimelineTaskRow[] };
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
  const links = await readSubflowLinks(sql, runId);
  const timeline = await readRunTimeline(sql, runId);
  return {
    run,
    timeline,
    parent: links.find((link) => link.relation === "parent") ?? null,
    children: links.filter((link) => link.relation === "child"),
    steps: run.steps.map((state) => ({
      state,
      definition: bySlug.get(state.stepSlug)!,
      tasks: tasksBySlug.get(state.stepSlug) ?? null,
    })),
  };
}
