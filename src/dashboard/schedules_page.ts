/**
 * The schedules page: every schedule with the flow it starts, its cron and time zone, when it
 * fires next (and whether it is late), when it fired last with the run it started, and whether it
 * is paused (docs/schedules.md).
 *
 * @module
 */

import type { ScheduleOverviewRow } from "../db/dashboard_queries.ts";
import { type Html, markup } from "./escape.ts";
import { formatSeconds, formatTime } from "./format.ts";
import { page, statusBadge } from "./page.ts";

/**
 * Seconds past its due time after which a running schedule's tick is marked late: workers fire
 * due ticks at every heartbeat (5 s by default), so a minute late means nothing fires them.
 */
export const LATE_AFTER_SECONDS = 60;

function flowCell(s: ScheduleOverviewRow): Html {
  const flow = s.flow_slug === null
    ? markup`<span class="missing">no flow</span>`
    : markup`<a href="flows/${encodeURIComponent(s.flow_slug)}">${s.flow_slug}</a>`;
  return s.target_kind === "alias"
    ? markup`${flow} <span class="muted">(alias ${s.target})</span>`
    : flow;
}

function nextCell(s: ScheduleOverviewRow): Html | string {
  if (s.paused_at !== null) return markup`<span class="muted">paused</span>`;
  if (s.next_due_at === null) return markup`<span class="muted">being computed</span>`;
  const seconds = (s.next_due_at.getTime() - s.now.getTime()) / 1000;
  const when = seconds >= 0
    ? `in ${formatSeconds(seconds)}`
    : markup`<span class="${-seconds > LATE_AFTER_SECONDS ? "missing" : ""}">${
      formatSeconds(-seconds)
    } late${-seconds > LATE_AFTER_SECONDS && ": is any worker running?"}</span>`;
  return markup`${formatTime(s.next_due_at)}<br>${when}`;
}

function lastCell(s: ScheduleOverviewRow): Html | string {
  if (s.last_fired_at === null) return "never";
  const run = s.last_run_id !== null &&
    markup`<br><a href="runs/${s.last_run_id}">run</a> ${
      s.last_run_status === null
        ? markup`<span class="muted">(pruned)</span>`
        : statusBadge(s.last_run_status)
    }`;
  const error = s.last_error !== null && markup`<br><span class="error">${s.last_error}</span>`;
  return markup`${formatTime(s.last_fired_at)}${run}${error}`;
}

/**
 * Renders the schedules page.
 *
 * @example Usage
 * ```ts ignore
 * import { schedulesPage } from "./schedules_page.ts";
 *
 * const doc = schedulesPage(await readScheduleOverview(sql));
 * ```
 */
export function schedulesPage(schedules: readonly ScheduleOverviewRow[]): string {
  const rows = schedules.map((s) =>
    markup`<tr data-schedule="${s.schedule_name}" class="${
      s.paused_at === null && s.next_due_at !== null &&
        s.now.getTime() - s.next_due_at.getTime() > LATE_AFTER_SECONDS * 1000
        ? "alert"
        : ""
    }"><td>${s.schedule_name}</td><td>${flowCell(s)}</td>
<td><code>${s.cron}</code><br><span class="muted">${s.timezone}</span></td>
<td>${nextCell(s)}</td><td>${lastCell(s)}</td>
<td>${
      s.paused_at === null
        ? "enabled"
        : markup`<span class="missing">paused</span> since ${formatTime(s.paused_at)}`
    }</td><td>${s.missed}</td></tr>`
  );
  const body = schedules.length === 0
    ? markup`<p class="muted">No schedules. <code>schedule()</code> creates one (docs/schedules.md).</p>`
    : markup`<table id="schedules"><tr><th>Schedule</th><th>Flow</th><th>Cron</th>
<th>Next fire</th><th>Last fire</th><th>Enabled</th><th>Missed ticks</th></tr>${rows}</table>`;
  return page("Schedules", markup`<h1>Schedules</h1>${body}`);
}
