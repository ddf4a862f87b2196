/**
 * The runs page: runs newest first, filtered by flow, status and start time, a page at a time.
 *
 * @module
 */

import type { RunFilter, RunListRow } from "../db/ops_queries.ts";
import { type Html, markup } from "./escape.ts";
import { formatDuration, formatTime } from "./format.ts";
import { page, statusBadge } from "./page.ts";

/** What the runs page shows. */
export interface RunsListing {
  /** The filter the rows were read with. */
  readonly filter: RunFilter;
  /** The runs of this page. */
  readonly runs: readonly RunListRow[];
  /** Whether there are more runs after this page. */
  readonly more: boolean;
  /** Every flow slug, for the filter. */
  readonly flows: readonly string[];
}

/** The address of the same filter at another offset. */
function pageLink(filter: RunFilter, offset: number): string {
  const params = new URLSearchParams();
  if (filter.flow !== null) params.set("flow", filter.flow);
  if (filter.status !== null) params.set("status", filter.status);
  if (filter.since !== null) params.set("since", filter.since);
  if (offset > 0) params.set("offset", String(offset));
  return `runs?${params}`;
}

function option(value: string, selected: string | null): Html {
  return markup`<option value="${value}"${value === (selected ?? "") && markup` selected`}>${
    value === "" ? "any" : value
  }</option>`;
}

function runRow(r: RunListRow): Html {
  return markup`<tr data-run="${r.run_id}"><td><a href="runs/${r.run_id}">${r.run_id}</a></td>
<td><a href="flows/${encodeURIComponent(r.flow_slug)}">${r.flow_slug}</a></td>
<td>${statusBadge(r.status)}${
    r.retry_count > 0 && markup` <span class="muted">retried ${r.retry_count}×</span>`
  }</td><td class="num">${r.steps - r.remaining_steps}/${r.steps}</td>
<td>${formatTime(r.started_at)}</td>
<td class="num">${formatDuration(r.started_at, r.finished_at)}</td>
<td class="error">${
    r.error_message?.split("\n", 1)[0] ??
      (r.status === "cancelled" ? `cancelled: ${r.cancel_reason ?? "no reason given"}` : "")
  }</td></tr>`;
}

/**
 * Renders the runs page.
 *
 * @example Usage
 * ```ts ignore
 * import { runsPage } from "./runs_page.ts";
 *
 * const doc = runsPage({ filter, runs, more: false, flows: ["orders"] });
 * ```
 */
export function runsPage({ filter, runs, more, flows }: RunsListing): string {
  const { offset, limit } = filter;
  const table = runs.length === 0
    ? markup`<p class="muted">No runs match.</p>`
    : markup`<table id="runs"><tr><th>Run</th><th>Flow</th><th>Status</th><th>Steps done</th>
<th>Started</th><th>Duration</th><th>Error</th></tr>${runs.map(runRow)}</table>`;
  const newer = offset > 0 &&
    markup`<a href="${pageLink(filter, Math.max(0, offset - limit))}">← newer</a>`;
  const older = more && markup`<a href="${pageLink(filter, offset + limit)}">older →</a>`;
  return page(
    "Runs",
    markup`<h1>Runs</h1>
<form class="filters" method="get" action="runs">
<label>Flow <select name="flow">${option("", filter.flow)}${
      flows.map((flow) => option(flow, filter.flow))
    }</select></label>
<label>Status <select name="status">${
      ["", "started", "completed", "failed", "cancelled"].map((status) =>
        option(status, filter.status)
      )
    }</select></label>
<label>Since <input name="since" placeholder="1 hour or 2026-11-30T12:00Z" value="${
      filter.since ?? ""
    }"></label>
<button>Filter</button></form>
${table}
<p>${newer} ${runs.length > 0 && `runs ${offset + 1}–${offset + runs.length}`} ${older}</p>`,
  );
}
