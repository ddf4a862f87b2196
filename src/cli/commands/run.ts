/**
 * `deno task ops run <run_id> [--watch]`: one run's steps as a tree in dependency order with
 * their state, tasks done/total (a subflow step: its child runs), attempts and timings, what each
 * waiting step waits for (its signal key or due time), and the last error of every task that
 * failed an attempt (and who cancelled or retried it); a subflow child's parent run and a parent's
 * child runs (docs/subflows.md); `--watch` follows the run's live events
 * (docs/events.md) and prints the tree again as they change it, until the run is completed,
 * failed or cancelled.
 *
 * @module
 */

import type { Sql } from "../../db/driver/postgres.ts";
import {
  readFlowDependencies,
  readSubflowLinks,
  type SubflowLinkRow,
} from "../../db/ops_queries.ts";
import { getRun, type RunState, type StepState } from "../../client/get_run.ts";
import { getRunTasks, type TaskState } from "../../client/get_run_tasks.ts";
import { watchRun } from "../../client/watch_run.ts";
import type { RunEvent } from "../../events/run_event.ts";
import { firstLine, formatTable, type OpsCommand } from "./command_types.ts";
import { formatDuration, formatIsoTime } from "../../dashboard/format.ts";

/** One step of the view: its state, dependencies, tasks, and tasks done of total. */
type StepDetail = StepState & {
  readonly dependsOn: readonly string[];
  readonly tasks: readonly TaskState[];
  readonly done: number;
  readonly total: number;
};

/** A run linked by a subflow step: the shown run's parent, or one of its children. */
interface SubflowLink {
  readonly runId: string;
  readonly flowSlug: string;
  readonly status: string;
  readonly stepSlug: string;
  readonly taskIndex: number;
}

/** A run with, per step, its dependencies and tasks, and its subflow parent and children. */
interface RunDetail {
  readonly run: RunState;
  readonly steps: readonly StepDetail[];
  readonly parent: SubflowLink | null;
  readonly children: readonly SubflowLink[];
}

function link(row: SubflowLinkRow): SubflowLink {
  return {
    runId: row.run_id,
    flowSlug: row.flow_slug,
    status: row.status,
    stepSlug: row.step_slug,
    taskIndex: row.task_index,
  };
}

async function readRun(sql: Sql, runId: string): Promise<RunDetail | null> {
  const run = await getRun(sql, runId);
  if (run === null) return null;
  const tasks = await getRunTasks(sql, runId);
  const deps = await readFlowDependencies(sql, run.flowSlug);
  const links = await readSubflowLinks(sql, runId);
  const parent = links.find((row) => row.relation === "parent");
  const children = links.filter((row) => row.relation === "child").map(link);
  return {
    run,
    parent: parent === undefined ? null : link(parent),
    children,
    steps: run.steps.map((step) => {
      const own = tasks.filter((task) => task.stepSlug === step.stepSlug);
      // A subflow step holds no task: it counts its child runs instead.
      const kids = children.filter((child) => child.stepSlug === step.stepSlug);
      const counted = kids.length > 0 ? kids : own;
      return {
        ...step,
        dependsOn: deps.filter((dep) => dep.step_slug === step.stepSlug).map((dep) => dep.dep_slug),
        tasks: own,
        done: counted.filter((item) => item.status === "completed").length,
        total: counted.length,
      };
    }),
  };
}

/** How far a step has come: 0 created, 1 started or waiting, 2 finished (any terminal status). */
function stage(status: StepState["status"]): number {
  return status === "created" ? 0 : status === "started" || status === "waiting" ? 1 : 2;
}

/**
 * The view after one live event: the tree follows the events between two reads. An event that
 * does not move the view forward (a replay of what the view already shows, after the first read
 * or a reconnect) leaves it as it is, so the view never goes back; the same `detail` is returned.
 */
function applyEvent(detail: RunDetail, event: RunEvent): RunDetail {
  const at = new Date(event.at);
  switch (event.type) {
    case "run:started":
    // A retry is in the state read at the start of the watch (the watch of a failed or cancelled
    // run ends at once, before any retry could follow).
    case "run:retried":
      return detail;
    case "run:cancelled":
      if (detail.run.status !== "started") return detail;
      return {
        ...detail,
        run: {
          ...detail.run,
          status: "cancelled",
          cancelledAt: at,
          cancelReason: event.reason,
          cancelledBy: event.cancelledBy,
        },
      };
    case "run:completed":
      if (detail.run.status !== "started") return detail;
      return { ...detail, run: { ...detail.run, status: "completed", completedAt: at } };
    case "run:failed":
      if (detail.run.status !== "started") return detail;
      return {
        ...detail,
        run: { ...detail.run, status: "failed", failedAt: at, errorMessage: event.errorMessage },
      };
  }
  if (
    event.type === "child:started" || event.type === "child:completed" ||
    event.type === "child:failed" || event.type === "child:cancelled"
  ) {
    return applyChildEvent(detail, event);
  }
  const current = detail.steps.find((step) => step.stepSlug === event.stepSlug);
  if (current === undefined) return detail;
  const moves = event.type === "step:progress"
    ? stage(current.status) === 1 && event.done > current.done
    : stage(current.status) <
      (event.type === "step:started" || event.type === "step:waiting" ? 1 : 2);
  if (!moves) return detail;
  const steps = detail.steps.map((step): StepDetail => {
    if (step !== current) return step;
    switch (event.type) {
      case "step:started":
        return {
          ...step,
          status: "started",
          startedAt: at,
          initialTasks: event.tasks,
          total: event.tasks,
          done: 0,
        };
      case "step:waiting":
        return {
          ...step,
          status: "waiting",
          waitingAt: at,
          waitKey: event.key,
          waitUntil: event.until === null ? null : new Date(event.until),
        };
      case "step:progress":
        return { ...step, done: event.done, total: event.total };
      case "step:completed":
        return { ...step, status: "completed", completedAt: at, done: step.total };
      case "step:failed":
        return { ...step, status: "failed", failedAt: at, errorMessage: event.errorMessage };
      case "step:skipped":
        return { ...step, status: "skipped", skippedAt: at, skipReason: event.reason };
      case "step:cancelled":
        return { ...step, status: "cancelled", cancelledAt: at };
    }
  });
  return { ...detail, steps };
}

/** A child's event (docs/subflows.md#events): its link's status, and its step's count of children. */
function applyChildEvent(
  detail: RunDetail,
  event: Extract<RunEvent, { type: `child:${string}` }>,
): RunDetail {
  const status = event.type.slice("child:".length);
  const known = detail.children.find((child) =>
    child.stepSlug === event.stepSlug && child.taskIndex === event.index
  );
  // Forward only: a start after the child's end (a replay) or a second end changes nothing.
  if (known !== undefined && (known.status !== "started" || status === "started")) return detail;
  const changed: SubflowLink = {
    runId: event.childRunId,
    flowSlug: event.flowSlug,
    status,
    stepSlug: event.stepSlug,
    taskIndex: event.index,
  };
  const children =
    (known === undefined
      ? [...detail.children, changed]
      : detail.children.map((child) => child === known ? changed : child))
      .toSorted((a, b) =>
        // As the read orders them: step slugs by code point (collate "C"), then index.
        a.stepSlug < b.stepSlug ? -1 : a.stepSlug > b.stepSlug ? 1 : a.taskIndex - b.taskIndex
      );
  const kids = children.filter((child) => child.stepSlug === event.stepSlug);
  const steps = detail.steps.map((step): StepDetail =>
    step.stepSlug === event.stepSlug
      ? {
        ...step,
        done: kids.filter((child) => child.status === "completed").length,
        total: Math.max(step.total, kids.length),
      }
      : step
  );
  return { ...detail, children, steps };
}

/** The human view: a header, the step tree, the failed attempts. */
function render({ run, steps, parent, children }: RunDetail): string[] {
  const finished = run.completedAt ?? run.failedAt ?? run.cancelledAt;
  const lines = [
    `Run ${run.runId} of flow ${run.flowSlug}: ${run.status}`,
    `started ${formatIsoTime(run.startedAt)}, ${
      finished === null ? "running for" : `finished ${formatIsoTime(finished)} after`
    } ${formatDuration(run.startedAt, finished)}`,
  ];
  if (parent !== null) {
    lines.push(
      `child of run ${parent.runId} (flow ${parent.flowSlug}, ${parent.status}), subflow step ` +
        `${parent.stepSlug}[${parent.taskIndex}]`,
    );
  }
  if (run.errorMessage !== null) lines.push(`error: ${firstLine(run.errorMessage)}`);
  if (run.status === "cancelled") {
    lines.push(
      `cancelled by ${run.cancelledBy}${
        run.cancelReason === null ? "" : `: ${firstLine(run.cancelReason)}`
      }`,
    );
  }
  if (run.retryCount > 0) {
    lines.push(
      `retried ${run.retryCount} ${run.retryCount === 1 ? "time" : "times"}, last by ` +
        `${run.retriedBy} at ${formatIsoTime(run.retriedAt)}`,
    );
  }
  // Steps come in definition order, where every dependency precedes its dependents.
  const depth = new Map<string, number>();
  for (const step of steps) {
    depth.set(step.stepSlug, Math.max(-1, ...step.dependsOn.map((dep) => depth.get(dep)!)) + 1);
  }
  lines.push("");
  // A wait step queues no task: it counts from when it started waiting.
  lines.push(...formatTable(
    ["STEP", "STATUS", "TASKS", "ATTEMPTS", "STARTED", "DURATION", "AFTER"],
    steps.map((step) => {
      const level = depth.get(step.stepSlug)!;
      return [
        `${"  ".repeat(Math.max(0, level - 1))}${level > 0 ? "└ " : ""}${step.stepSlug}`,
        step.status,
        step.initialTasks === null ? "-" : `${step.done}/${step.total}`,
        String(step.tasks.reduce((sum, task) => sum + task.attempts, 0)),
        formatIsoTime(step.startedAt ?? step.waitingAt),
        formatDuration(
          step.startedAt ?? step.waitingAt,
          step.completedAt ?? step.failedAt ?? step.skippedAt ?? step.cancelledAt,
        ),
        step.dependsOn.length === 0 ? "-" : step.dependsOn.join(", "),
      ];
    }),
    ["left", "left", "right", "right", "left", "right", "left"],
  ));
  const failed = steps.flatMap((step) => step.tasks).filter((task) => task.lastError !== null);
  if (failed.length > 0) {
    lines.push("", "Failed attempts (last error per task; the full text with --json):");
    for (const task of failed) {
      lines.push(
        `  ${task.stepSlug}[${task.taskIndex}] ${task.status} after ${task.attempts} attempts: ` +
          firstLine(task.lastError!),
      );
    }
  }
  if (children.length > 0) {
    lines.push("", "Subflow children (sluice run <child> shows one):");
    for (const child of children) {
      lines.push(
        `  ${child.stepSlug}[${child.taskIndex}] run ${child.runId} (flow ${child.flowSlug}): ` +
          child.status,
      );
    }
  }
  for (const step of steps) {
    if (step.status === "waiting") lines.push(waitingLine(step));
    if (step.skipReason !== null) lines.push(`${step.stepSlug} skipped: ${step.skipReason}`);
  }
  return lines;
}

/**
 * What a waiting step waits for: a sleep its due time, a signal wait its key (JSON-quoted: a key
 * is any text) and when it times out, a subflow (no key, no due time) its child runs.
 */
function waitingLine(step: StepState): string {
  if (step.waitKey === null && step.waitUntil === null) {
    return `${step.stepSlug} waiting for its subflow children`;
  }
  if (step.waitKey === null) {
    return `${step.stepSlug} waiting until ${formatIsoTime(step.waitUntil)}`;
  }
  const timeout = step.waitUntil === null
    ? "no timeout"
    : `times out ${formatIsoTime(step.waitUntil)}`;
  return `${step.stepSlug} waiting for signal ${JSON.stringify(step.waitKey)} (${timeout})`;
}

/**
 * `--json`: the run (camelCase, as `getRun` returns it) with each step's `dependsOn` and `tasks`,
 * and its subflow `parent` (or null) and `children`.
 */
function toJson({ run, steps, parent, children }: RunDetail): Record<string, unknown> {
  return {
    ...run,
    steps: steps.map(({ done: _done, total: _total, ...step }) => step),
    parent,
    children,
  };
}

/**
 * The `run` command. Exits 1 when no run has the id. With `--watch` it exits when the run is
 * terminal: 0 completed, 1 failed or cancelled.
 *
 * @example Usage
 * ```ts ignore
 * import { runCommand } from "./run.ts";
 *
 * await runCommand.run(sql, { positional: [runId], json: false, options: { watch: true } }, io);
 * ```
 */
export const runCommand: OpsCommand = {
  name: "run",
  positional: ["run_id"],
  options: [{ name: "watch", summary: "follow the live events until the run ends" }],
  json: true,
  summary: "one run: steps in dependency order, tasks, attempts, errors, timings",
  description:
    "Shows the run's steps as a tree (a step under the dependencies it waits for) with\n" +
    "state, tasks done/total, attempts, when it started and how long it took, then the last\n" +
    "error of every task that failed an attempt and what each waiting step waits for (its\n" +
    "signal key or due time), a child run's parent and a parent's subflow children.\n" +
    "--watch follows the run's live events and prints the view\n" +
    "again whenever they change it, until the run is terminal (with --json: once, then), and\n" +
    "exits 0 when it completed, 1 when it failed or was cancelled.",
  async run(sql, args, io) {
    const [runId] = args.positional;
    const watch = args.options.watch === true;
    let detail = await readRun(sql, runId);
    if (detail === null) {
      io.err(`Cannot show run ${JSON.stringify(runId)}: no run has that id (see ops runs)`);
      return 1;
    }
    let printed = "";
    const print = (view: RunDetail) => {
      // Durations of unfinished steps grow every second; compare without them.
      const lines = render(view);
      const key = lines.join("\n").replace(/\d+(\.\d+)?s\+|\d+m \d+s\+/g, "");
      if (key === printed) return;
      if (printed !== "") io.out("");
      for (const line of lines) io.out(line);
      printed = key;
    };
    if (!watch || !args.json) {
      if (args.json) io.out(JSON.stringify(toJson(detail), null, 2));
      else print(detail);
    }
    if (!watch) return 0;
    // The replay at the start of the events repeats what the first read showed: it changes
    // nothing, so nothing is printed again until the run moves.
    for await (const event of watchRun(sql, runId)) {
      const next = applyEvent(detail, event);
      if (next === detail) continue;
      // A step that finished: its tasks' attempts and errors are read again (events do not
      // carry them). The read follows the event, so it shows that state or a later one.
      detail = event.type.startsWith("step:") && event.type !== "step:started" &&
          event.type !== "step:progress"
        ? (await readRun(sql, runId)) ?? next
        : next;
      if (!args.json) print(detail);
    }
    // The run is terminal: read it once more for what events do not carry (attempts, errors).
    detail = (await readRun(sql, runId)) ?? detail;
    if (args.json) io.out(JSON.stringify(toJson(detail), null, 2));
    else print(detail);
    return detail.run.status === "completed" ? 0 : 1;
  },
};
