/**
 * A run's timeline as SVG: one lane per step (and per map task, or for a large map its tasks
 * together plus the most telling ones), bars for time queued, each attempt, earlier attempts
 * with their retries' backoff, a retry's pending backoff and a durable wait, and marks for
 * cancels, on an axis from the run's start to its end (or now).
 *
 * @module
 */

import type { TimelineTaskRow } from "../db/dashboard_queries.ts";
import { type Html, markup } from "./escape.ts";
import { formatSeconds, formatTime } from "./format.ts";
import type { RunView } from "./run_view.ts";
import { isWaitStep } from "./step_kinds.ts";

/** A map step with more tasks than this shows one lane for them all and its telling tasks. */
export const MAX_TASK_LANES = 8;
/** Tasks of a collapsed map shown on lanes of their own: failed, retried or running ones. */
const TELLING_TASK_LANES = 4;

const WIDTH = 1000;
const LABEL_WIDTH = 200;
const PLOT_RIGHT = WIDTH - 14;
const LANE_HEIGHT = 22;
const AXIS_HEIGHT = 24;
const TICKS = 5;

/** One bar of a lane. */
interface Bar {
  /** `queued`, `attempt`, `retries`, `backoff` or `wait`: the class and `data-kind`. */
  readonly kind: string;
  readonly from: Date;
  readonly to: Date;
  /** The state colour of an attempt or a wait (`s-completed`…). */
  readonly status?: string;
  readonly title: string;
}

/** One lane: its label, its bars and its marks (a cancel). */
interface Lane {
  readonly id: string;
  readonly label: string;
  readonly bars: readonly Bar[];
  readonly cancels: readonly Date[];
}

const seconds = (list: readonly number[]) => list.map((s) => formatSeconds(s)).join(", ");

/** The bars of one task: queued, earlier attempts with their backoff, the latest attempt. */
function taskBars(task: TimelineTaskRow, now: Date, name: string): Bar[] {
  const bars: Bar[] = [];
  const retries = task.backoff_seconds.length;
  const pending = task.status === "queued" && task.attempts > 0;
  const earlier = pending ? task.attempts : task.attempts - 1;
  const firstStart = task.started_at ?? (task.status === "queued" ? now : task.ended_at ?? now);
  if (earlier > 0 && task.started_at !== null && !pending) {
    bars.push({
      kind: "retries",
      from: task.queued_at,
      to: task.started_at,
      title: `${name}: queued ${formatTime(task.queued_at)}; ${earlier} earlier attempt${
        earlier === 1 ? "" : "s"
      } failed, retried after ${seconds(task.backoff_seconds)} backoff`,
    });
  } else if (!pending) {
    bars.push({
      kind: "queued",
      from: task.queued_at,
      to: firstStart,
      title: `${name}: queued ${formatTime(task.queued_at)}, waited ${
        formatSeconds((firstStart.getTime() - task.queued_at.getTime()) / 1000)
      }`,
    });
  }
  if (pending && task.started_at !== null) {
    const delay = task.backoff_seconds.at(-1) ?? 0;
    // The failure's time is not stored: the backoff is drawn from the failed attempt's start.
    bars.push({
      kind: "retries",
      from: task.queued_at,
      to: task.started_at,
      title: `${name}: queued ${formatTime(task.queued_at)}${
        retries > 1
          ? `; ${retries - 1} earlier retries after ${seconds(task.backoff_seconds.slice(0, -1))}`
          : ""
      }`,
    }, {
      kind: "backoff",
      from: task.started_at,
      to: new Date(task.started_at.getTime() + delay * 1000),
      title: `${name}: attempt ${task.attempts} (started ${formatTime(task.started_at)}) failed${
        task.error_message === null ? "" : `: ${task.error_message.split("\n", 1)[0]}`
      }; retry after ${formatSeconds(delay)} backoff`,
    });
  } else if (task.started_at !== null) {
    const end = task.ended_at ?? now;
    bars.push({
      kind: "attempt",
      from: task.started_at,
      to: end,
      status: task.status,
      title: `${name}: attempt ${task.attempts} ${task.status}, ${
        formatSeconds((end.getTime() - task.started_at.getTime()) / 1000)
      }${task.ended_at === null ? " so far" : ""}${
        task.error_message === null ? "" : `: ${task.error_message.split("\n", 1)[0]}`
      }${task.stalled_requeues > 0 ? ` (${task.stalled_requeues} stalled requeues)` : ""}`,
    });
  }
  return bars;
}

/** Whether a task of a collapsed map gets a lane of its own. */
function telling(task: TimelineTaskRow): boolean {
  return task.status === "failed" || task.attempts > 1 || task.status === "started" ||
    (task.status === "queued" && task.attempts > 0);
}

/** The lanes of a run: per step its wait, its task(s), or its map's tasks. */
function lanes({ run, steps }: RunView, now: Date, tasks: readonly TimelineTaskRow[]): Lane[] {
  const bySlug = Map.groupBy(tasks, (task) => task.step_slug);
  return steps.flatMap(({ state, definition }): Lane[] => {
    const slug = state.stepSlug;
    const stepCancels = state.cancelledAt === null ? [] : [state.cancelledAt];
    if (isWaitStep(definition.step_type) && state.waitingAt !== null) {
      const end = state.completedAt ?? state.skippedAt ?? state.failedAt ?? state.cancelledAt;
      const to = end ?? now;
      return [{
        id: slug,
        label: `${slug} (${definition.step_type})`,
        cancels: stepCancels,
        bars: [{
          kind: "wait",
          from: state.waitingAt,
          to,
          status: state.status,
          title: `${slug}: waited ${
            formatSeconds((to.getTime() - state.waitingAt.getTime()) / 1000)
          }${end === null ? " so far" : ""}${
            state.waitKey === null ? "" : ` for signal ${JSON.stringify(state.waitKey)}`
          }${
            state.waitUntil === null ? "" : `, until ${formatTime(state.waitUntil)} at most`
          }; ${state.status}`,
        }],
      }];
    }
    const own = bySlug.get(slug) ?? [];
    if (own.length === 0) return [{ id: slug, label: slug, cancels: stepCancels, bars: [] }];
    const total = own[0].step_tasks;
    const taskLane = (task: TimelineTaskRow): Lane => {
      const name = definition.step_type === "map" ? `${slug}[${task.task_index}]` : slug;
      return {
        id: definition.step_type === "map" ? `${slug}/${task.task_index}` : slug,
        label: name,
        cancels: task.cancelled_at === null ? [] : [task.cancelled_at],
        bars: taskBars(task, now, name),
      };
    };
    if (definition.step_type !== "map" || total <= MAX_TASK_LANES) return own.map(taskLane);
    const first = own[0];
    const started = first.step_first_started_at;
    const end = first.step_last_ended_at !== null && state.status !== "started"
      ? first.step_last_ended_at
      : now;
    const summary = `${first.step_completed}/${total} done${
      first.step_failed > 0 ? `, ${first.step_failed} failed` : ""
    }`;
    const all: Lane = {
      id: `${slug}/*`,
      label: `${slug} · ${total} tasks`,
      cancels: stepCancels,
      bars: [
        {
          kind: "queued",
          from: first.step_first_queued_at,
          to: started ?? now,
          title: `${slug}: ${total} tasks queued from ${formatTime(first.step_first_queued_at)}`,
        },
        ...(started === null ? [] : [{
          kind: "attempt",
          from: started,
          to: end,
          status: state.status,
          title: `${slug}: ${total} tasks from the first start ${formatTime(started)} to ${
            first.step_last_ended_at === null ? "now" : `the last end ${formatTime(end)}`
          }: ${summary}`,
        }]),
      ],
    };
    return [all, ...own.filter(telling).slice(0, TELLING_TASK_LANES).map(taskLane)];
  }).concat(
    run.status === "cancelled" && run.cancelledAt !== null
      ? [{ id: "run", label: "run cancelled", bars: [], cancels: [run.cancelledAt] }]
      : [],
  );
}

/**
 * Draws the run's timeline. Every lane is a `<g class="lane">` with `data-lane` (the step slug,
 * `step/index` for a map task, `step/*` for a collapsed map's tasks together); every bar a
 * `<rect class="bar">` with `data-kind` (`queued`, `attempt`, `retries`, `backoff`, `wait`) and a
 * tooltip; a cancel a `<line class="cancel">`.
 *
 * @param view The run with its steps.
 * @param timeline The run's tasks (readRunTimeline) and the database's time now.
 * @returns The `<svg>` element.
 *
 * @example Usage
 * ```ts ignore
 * import { timelineSvg } from "./timeline_svg.ts";
 *
 * const svg = timelineSvg(view, await readRunTimeline(sql, view.run.runId));
 * ```
 */
export function timelineSvg(
  view: RunView,
  timeline: { readonly now: Date; readonly tasks: readonly TimelineTaskRow[] },
): Html {
  const { run } = view;
  const now = timeline.now;
  const all = lanes(view, now, timeline.tasks);
  const start = run.startedAt.getTime();
  const runEnd = run.completedAt ?? run.failedAt ?? run.cancelledAt;
  const barEnds = all.flatMap((lane) => [
    ...lane.bars.map((bar) => bar.to.getTime()),
    ...lane.cancels.map((at) => at.getTime()),
  ]);
  const end = Math.max(start + 1, (runEnd ?? now).getTime(), ...barEnds);
  const x = (at: Date | number) =>
    LABEL_WIDTH +
    ((typeof at === "number" ? at : at.getTime()) - start) / (end - start) *
      (PLOT_RIGHT - LABEL_WIDTH);
  const height = AXIS_HEIGHT + all.length * LANE_HEIGHT + 6;
  const ticks = Array.from({ length: TICKS + 1 }, (_, i) => {
    const at = start + (end - start) * i / TICKS;
    const tx = x(at);
    return markup`<line class="tick" x1="${tx}" y1="${AXIS_HEIGHT - 4}" x2="${tx}" y2="${height}"/>
<text class="tick" x="${tx}" y="${AXIS_HEIGHT - 8}" text-anchor="${
      i === 0 ? "start" : i === TICKS ? "end" : "middle"
    }">+${formatSeconds((at - start) / 1000)}</text>`;
  });
  const rows = all.map((lane, i) => {
    const y = AXIS_HEIGHT + i * LANE_HEIGHT;
    const bars = lane.bars.map((bar) => {
      const [x1, x2] = [x(bar.from), x(bar.to)];
      return markup`<rect class="bar ${bar.kind}${
        bar.status !== undefined && ` s-${bar.status}`
      }" data-kind="${bar.kind}" x="${x1}" y="${y + 4}" width="${Math.max(2, x2 - x1)}" height="${
        LANE_HEIGHT - 8
      }"><title>${bar.title}</title></rect>`;
    });
    const cancels = lane.cancels.map((at) =>
      markup`<line class="cancel" x1="${x(at)}" y1="${y + 1}" x2="${x(at)}" y2="${
        y + LANE_HEIGHT - 1
      }"><title>${lane.label}: cancelled ${formatTime(at)}</title></line>`
    );
    return markup`<g class="lane" data-lane="${lane.id}"><text class="lane-label" x="6" y="${
      y + 15
    }">${
      lane.label.length > 30 ? `${lane.label.slice(0, 29)}…` : lane.label
    }</text>${bars}${cancels}</g>`;
  });
  const endLine = runEnd !== null &&
    markup`<line class="run-end" x1="${x(runEnd)}" y1="${AXIS_HEIGHT - 4}" x2="${
      x(runEnd)
    }" y2="${height}"><title>run ${run.status} ${formatTime(runEnd)}</title></line>`;
  return markup`<svg class="timeline" role="img" aria-label="run timeline" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" data-start="${run.startedAt.toISOString()}" data-end="${
    new Date(end).toISOString()
  }">${ticks}${rows}${endLine}</svg>`;
}
