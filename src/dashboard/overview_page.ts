/**
 * The overview page: worker functions, queues, route coverage, flows and the runs of the last
 * hour, with the operator actions on worker functions.
 *
 * @module
 */

import type { CoverageRow, QueueRow } from "../db/ops_queries.ts";
import type { FlowSummaryRow, FunctionOverviewRow } from "../db/dashboard_queries.ts";
import { type Html, markup } from "./escape.ts";
import { formatSeconds, formatTime } from "./format.ts";
import { page, statusBadge } from "./page.ts";

/** What the overview shows. */
export interface Overview {
  /** Worker functions with their status and last live heartbeat. */
  readonly functions: readonly FunctionOverviewRow[];
  /** Queues with their depth and oldest message. */
  readonly queues: readonly QueueRow[];
  /** Every route (flow, step) with its live workers. */
  readonly coverage: readonly CoverageRow[];
  /** Compiled flows. */
  readonly flows: readonly FlowSummaryRow[];
  /** Runs started in the last hour, per status. */
  readonly runsLastHour: Readonly<Record<string, number>>;
  /** Queues that only wait steps name: no worker needed. */
  readonly waitOnlyQueues: readonly string[];
}

/** A button that opens the confirmation page of an action on a worker function. */
function actionButton(action: string, functionName: string, label: string): Html {
  return markup`<form class="inline" method="get" action="actions/${action}">
<input type="hidden" name="function" value="${functionName}"><button>${label}</button></form>`;
}

function functionRow(f: FunctionOverviewRow): Html {
  const pause = f.restart_paused
    ? markup`<span class="missing">paused</span> since ${formatTime(f.restart_paused_at)}<br>
<span class="reason">${f.pause_reason}</span>`
    : "-";
  return markup`<tr class="${f.restart_paused ? "alert" : ""}" data-function="${f.function_name}">
<td>${f.function_name}</td>
<td>${f.enabled ? "enabled" : markup`<span class="missing">disabled</span>`}</td>
<td>${pause}</td>
<td class="num">${f.live_workers}</td>
<td>${formatTime(f.last_heartbeat_at)}</td>
<td>${formatTime(f.last_invoked_at)}</td>
<td>${f.restart_paused && actionButton("clear-pause", f.function_name, "Clear pause")}
${
    actionButton(
      f.enabled ? "disable" : "enable",
      f.function_name,
      f.enabled ? "Disable" : "Enable",
    )
  }</td>
</tr>`;
}

function functionsTable(functions: readonly FunctionOverviewRow[]): Html {
  if (functions.length === 0) return markup`<p class="muted">No worker functions yet.</p>`;
  return markup`<table id="functions"><tr><th>Function</th><th>Enabled</th><th>Restart pause</th>
<th>Live workers</th><th>Last heartbeat</th><th>Last invoked</th><th>Actions</th></tr>
${functions.map(functionRow)}</table>`;
}

function queuesTable(queues: readonly QueueRow[], waitOnly: readonly string[]): Html {
  if (queues.length === 0) return markup`<p class="muted">No queues yet.</p>`;
  const rows = queues.map((q) =>
    markup`<tr data-queue="${q.queue_name}"><td>${q.queue_name}</td>
<td>${q.ownership === "private" ? `private to ${q.owner_flow_slug}` : q.ownership}</td>
<td class="num">${q.queue_length}</td><td class="num">${q.queue_visible_length}</td>
<td class="num">${q.oldest_msg_age_sec === null ? "-" : formatSeconds(q.oldest_msg_age_sec)}</td>
<td class="num">${
      waitOnly.includes(q.queue_name)
        ? markup`<span class="muted">wait steps only: no worker needed</span>`
        : q.live_workers
    }</td></tr>`
  );
  return markup`<table id="queues"><tr><th>Queue</th><th>Ownership</th><th>Depth</th>
<th>Visible</th><th>Oldest message</th><th>Live workers</th></tr>${rows}</table>`;
}

function flowLink(flowSlug: string): Html {
  return markup`<a href="flows/${encodeURIComponent(flowSlug)}">${flowSlug}</a>`;
}

function coverageTable(coverage: readonly CoverageRow[]): Html {
  if (coverage.length === 0) return markup`<p class="muted">No flows compiled yet.</p>`;
  const missing = coverage.filter((route) => route.missing_worker).length;
  const rows = coverage.map((r) =>
    markup`<tr class="${
      r.missing_worker ? "alert" : ""
    }" data-route="${r.flow_slug}.${r.step_slug}">
<td>${flowLink(r.flow_slug)}</td><td>${r.step_slug}</td><td>${r.queue_name}</td>
<td class="num">${r.live_workers}</td><td class="num">${r.queued_tasks}</td>
<td>${r.missing_worker ? markup`<span class="missing">MISSING</span>` : "ok"}</td></tr>`
  );
  const headline = missing === 0
    ? "Every route has a live worker."
    : markup`<span class="missing">${missing} of ${coverage.length} routes have no live worker</span>:
their tasks wait in their queues until one starts.`;
  return markup`<p>${headline}</p><table id="coverage"><tr><th>Flow</th><th>Step</th>
<th>Queue</th><th>Live workers</th><th>Queued tasks</th><th>Status</th></tr>${rows}</table>`;
}

function runsSummary(counts: Readonly<Record<string, number>>): Html {
  const links = ["started", "completed", "failed", "cancelled"].map((status) =>
    markup`<a href="runs?status=${status}&amp;since=1+hour">${statusBadge(status)} ${
      counts[status] ?? 0
    }</a> `
  );
  return markup`<p id="runs-last-hour">${links}</p>`;
}

function flowsTable(flows: readonly FlowSummaryRow[]): Html {
  if (flows.length === 0) return markup`<p class="muted">No flows compiled yet.</p>`;
  const rows = flows.map((f) =>
    markup`<tr><td>${flowLink(f.flow_slug)}</td><td>${f.queue_mode}</td>
<td class="num">${f.steps}</td><td>${formatTime(f.created_at)}</td>
<td><a href="runs?flow=${encodeURIComponent(f.flow_slug)}">runs</a></td></tr>`
  );
  return markup`<table id="flows"><tr><th>Flow</th><th>Queue mode</th><th>Steps</th>
<th>Compiled</th><th></th></tr>${rows}</table>`;
}

/**
 * Renders the overview page.
 *
 * @example Usage
 * ```ts ignore
 * import { overviewPage } from "./overview_page.ts";
 *
 * const doc = overviewPage({ functions, queues, coverage, flows, runsLastHour: { failed: 2 }, waitOnlyQueues: [] });
 * ```
 */
export function overviewPage(overview: Overview): string {
  return page(
    "Overview",
    markup`<h1>Overview</h1>
<h2>Runs started in the last hour</h2>${runsSummary(overview.runsLastHour)}
<h2>Worker functions</h2>${functionsTable(overview.functions)}
<h2>Route coverage</h2>${coverageTable(overview.coverage)}
<h2>Queues</h2>${queuesTable(overview.queues, overview.waitOnlyQueues)}
<h2>Flows</h2>${flowsTable(overview.flows)}`,
  );
}
