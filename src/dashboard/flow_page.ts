/**
 * The flow page: its options, its last hour's throughput and p95 durations as charts, its steps
 * as a graph and a table, the queues they use, and the stored shape that workers' definitions are
 * checked against.
 *
 * @module
 */

import type { FlowMinuteRow, FlowRow, FlowStepRow } from "../db/dashboard_queries.ts";
import type { QueueRow } from "../db/ops_queries.ts";
import { type Html, markup } from "./escape.ts";
import { chartSvg } from "./chart_svg.ts";
import { dagSvg } from "./dag_svg.ts";
import { formatSeconds, formatTime } from "./format.ts";
import { page } from "./page.ts";
import { isWaitStep } from "./step_kinds.ts";

/** What the flow page shows. */
export interface FlowView {
  /** The flow row with its aliases and stored shape. */
  readonly flow: FlowRow;
  /** Its steps in definition order. */
  readonly steps: readonly FlowStepRow[];
  /** The queues its steps use. */
  readonly queues: readonly QueueRow[];
  /** Its last 60 minutes, one row per minute, oldest first. */
  readonly lastHour: readonly FlowMinuteRow[];
}

/** The last hour's charts: throughput and p95 durations, a value per minute. */
function lastHourCharts(rows: readonly FlowMinuteRow[]): Html {
  const minutes = rows.map((row) => row.minute);
  const sum = (pick: (row: FlowMinuteRow) => number) =>
    rows.reduce((total, row) => total + pick(row), 0);
  const charts = [
    chartSvg({
      id: "runs",
      title: "Runs finished per minute",
      minutes,
      kind: "bars",
      series: [
        { name: "completed", cls: "completed", values: rows.map((r) => r.runs_completed) },
        { name: "failed", cls: "failed", values: rows.map((r) => r.runs_failed) },
      ],
    }),
    chartSvg({
      id: "tasks",
      title: "Tasks completed per minute",
      minutes,
      kind: "bars",
      series: [{ name: "tasks", cls: "tasks", values: rows.map((r) => r.tasks_completed) }],
    }),
    chartSvg({
      id: "run-p95",
      title: "p95 run duration (completed runs)",
      minutes,
      kind: "line",
      seconds: true,
      series: [{ name: "p95", cls: "run-p95", values: rows.map((r) => r.run_p95_seconds) }],
    }),
    chartSvg({
      id: "task-p95",
      title: "p95 task duration (last attempt)",
      minutes,
      kind: "line",
      seconds: true,
      series: [{ name: "p95", cls: "task-p95", values: rows.map((r) => r.task_p95_seconds) }],
    }),
  ];
  return markup`<p id="last-hour-totals">${sum((r) => r.runs_completed)} runs completed, ${
    sum((r) => r.runs_failed)
  } failed, ${
    sum((r) => r.tasks_completed)
  } tasks completed in the last hour (by the minute they ended).</p>
<div class="charts">${charts}</div>
<p class="muted" id="queue-depth-history">Queue depth history: not recorded. PGMQ keeps each queue's current depth only, and sluice samples none; the current depths are under Queues below.</p>`;
}

/** A step option: its own value, or the flow's default it inherits. */
function option(own: number | null, inherited: number, unit = ""): string {
  return own === null ? `${inherited}${unit} (flow)` : `${own}${unit}`;
}

/** A step's input condition: `if {...}`, `unless {...}`, and what happens when unmet. */
function condition(s: FlowStepRow): Html | string {
  if (s.required_input_pattern === null && s.forbidden_input_pattern === null) return "-";
  const required = s.required_input_pattern !== null &&
    markup`if <code>${JSON.stringify(s.required_input_pattern)}</code> `;
  const forbidden = s.forbidden_input_pattern !== null &&
    markup`unless <code>${JSON.stringify(s.forbidden_input_pattern)}</code> `;
  return markup`${required}${forbidden}else ${s.when_unmet}`;
}

/** A wait step's cells for the task options it does not use. */
const NOT_A_TASK = markup`<td class="muted" colspan="4">wait: no task, no worker</td>`;

function stepRow(s: FlowStepRow, flow: FlowRow): Html {
  const wait = isWaitStep(s.step_type);
  const taskCells = wait ? NOT_A_TASK : markup`<td>${s.queue_name}</td>
<td>${option(s.opt_max_attempts, flow.opt_max_attempts)}</td>
<td>${option(s.opt_base_delay, flow.opt_base_delay, "s")}</td>
<td>${option(s.opt_timeout, flow.opt_timeout, "s")}</td>`;
  return markup`<tr data-step="${s.step_slug}"${
    wait && markup` data-wait="true"`
  }><td class="num">${s.step_index}</td>
<td>${s.step_slug}</td><td>${s.step_type}${s.map_source !== null && ` over ${s.map_source}`}</td>
<td>${s.deps.length === 0 ? "-" : s.deps.join(", ")}</td>${taskCells}
<td>${s.opt_start_delay === null ? "-" : `${s.opt_start_delay}s`}</td>
<td>${condition(s)}</td><td>${s.when_exhausted}</td></tr>`;
}

/**
 * Renders the flow page.
 *
 * @example Usage
 * ```ts ignore
 * import { flowPage } from "./flow_page.ts";
 *
 * const doc = flowPage({ flow, steps, queues, lastHour });
 * ```
 */
export function flowPage({ flow, steps, queues, lastHour }: FlowView): string {
  const queueRows = queues.map((q) =>
    markup`<tr data-queue="${q.queue_name}"><td>${q.queue_name}</td><td>${q.ownership}</td>
<td class="num">${q.queue_length}</td>
<td class="num">${q.oldest_msg_age_sec === null ? "-" : formatSeconds(q.oldest_msg_age_sec)}</td>
<td class="num">${q.live_workers}</td></tr>`
  );
  const graph = dagSvg(steps.map((s) => ({
    slug: s.step_slug,
    deps: s.deps,
    status: "created",
    label: isWaitStep(s.step_type) ? `wait · ${s.step_type}` : s.step_type,
    wait: isWaitStep(s.step_type),
  })));
  return page(
    `Flow ${flow.flow_slug}`,
    markup`<h1>Flow <code>${flow.flow_slug}</code></h1>
<table><tr><th>Queue mode</th><td>${flow.queue_mode}</td></tr>
<tr><th>Aliases</th><td>${flow.aliases.length === 0 ? "-" : flow.aliases.join(", ")}</td></tr>
<tr><th>Max attempts</th><td>${flow.opt_max_attempts}</td></tr>
<tr><th>Base delay</th><td>${flow.opt_base_delay}s</td></tr>
<tr><th>Timeout</th><td>${flow.opt_timeout}s</td></tr>
<tr><th>Compiled</th><td>${formatTime(flow.created_at)}</td></tr></table>
<p><a href="runs?flow=${encodeURIComponent(flow.flow_slug)}">Runs of this flow</a></p>
<h2>Last hour</h2>${lastHourCharts(lastHour)}
<h2>Steps</h2>${graph}
<div class="scroll"><table id="flow-steps"><tr><th>#</th><th>Step</th><th>Type</th><th>After</th><th>Queue</th>
<th>Max attempts</th><th>Base delay</th><th>Timeout</th><th>Start delay</th><th>Condition</th>
<th>When exhausted</th></tr>${steps.map((s) => stepRow(s, flow))}</table></div>
<h2>Queues</h2><table id="flow-queues"><tr><th>Queue</th><th>Ownership</th><th>Depth</th><th>Oldest message</th>
<th>Live workers</th></tr>${queueRows}</table>
<h2>Compiled definition</h2>
<p class="muted">The stored shape (sluice.stored_shape) a worker's definition must match.</p>
<pre id="shape">${JSON.stringify(flow.shape, null, 2)}</pre>`,
  );
}
