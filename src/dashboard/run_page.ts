/**
 * The run page: the flow's DAG with each step's state, the steps with their tasks, attempts,
 * errors, outputs and timings (a waiting step with its signal key or due time), a timeline of its
 * attempts, retries, waits and cancels, the run's input
 * and output, and its subflow parent and children, linked (docs/subflows.md). Its parts are also sent on their own
 * as the run changes (server-sent events), and a small script swaps them in.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { Html, markup } from "./escape.ts";
import { dagSvg } from "./dag_svg.ts";
import { formatDuration, formatTime, jsonPreview } from "./format.ts";
import { page, statusBadge } from "./page.ts";
import type { RunStepView, RunView } from "./run_view.ts";
import { runActionButton } from "./run_actions.ts";
import { isWaitStep } from "./step_kinds.ts";
import { timelineSvg } from "./timeline_svg.ts";

/** Characters of a value shown before it must be expanded. */
const PREVIEW_CHARS = 80;
/** Characters of a value shown at most, expanded: a huge output must not swell the page. */
const MAX_VALUE_CHARS = 64 * 1024;

/** The parts of the run page that change while the run goes on, by element id. */
export interface RunParts {
  /** Status, timings, error, input and output of the run. */
  readonly summary: Html;
  /** The DAG. */
  readonly dag: Html;
  /** The steps table. */
  readonly steps: Html;
  /** The timeline. */
  readonly timeline: Html;
}

/** A JSON value: a preview, expandable to the whole (capped) when it is longer. */
function jsonValue(value: unknown): Html {
  const { preview, full, cut, capped } = jsonPreview(value, PREVIEW_CHARS, MAX_VALUE_CHARS);
  if (!cut) return markup`<code>${preview}</code>`;
  const note = capped && markup`<p class="muted">(cut at ${MAX_VALUE_CHARS} characters)</p>`;
  return markup`<details><summary><code>${preview}</code></summary><pre>${full}</pre>${note}</details>`;
}

/** A text that may be long (an error with its stack): the first line, the rest expandable. */
function errorText(text: string | null): Html | string {
  if (text === null) return "-";
  const [first] = text.split("\n", 1);
  if (first.length === text.length) return markup`<span class="error">${text}</span>`;
  return markup`<details class="error"><summary>${first}</summary><pre>${text}</pre></details>`;
}

/**
 * What a waiting step waits for, in words: a signal wait its key and when it times out, a sleep
 * its due time, a subflow its child runs; `null` for a step that is not waiting.
 */
function waitingFor(state: RunStepView["state"]): string | null {
  if (state.status !== "waiting") return null;
  if (state.waitKey === null && state.waitUntil === null) return "its subflow children";
  if (state.waitKey === null) return `until ${formatTime(state.waitUntil)}`;
  const timeout = state.waitUntil === null
    ? "no timeout"
    : `times out ${formatTime(state.waitUntil)}`;
  return `signal ${JSON.stringify(state.waitKey)} (${timeout})`;
}

/**
 * The second line of a DAG node: the state in words and, for a map step, tasks done/total; for
 * a waiting step the kind of wait (its key or due time is too long for the node: the tooltip and
 * the steps table say it).
 */
function stepLabel({ state, definition, tasks }: RunStepView): string {
  if (state.status === "waiting") return `waiting · ${definition.step_type}`;
  const words = state.skipReason === null
    ? state.status
    : `${state.status} · ${state.skipReason.replaceAll("_", " ")}`;
  if (definition.step_type !== "map" || tasks === null) return words;
  return `${words} · ${tasks.completed}/${tasks.tasks}`;
}

/** Tasks done/total and how many are failed, running or queued. */
function taskCounts(tasks: RunStepView["tasks"]): string {
  if (tasks === null) return "-";
  const more = [
    tasks.failed > 0 && `${tasks.failed} failed`,
    tasks.started > 0 && `${tasks.started} running`,
    tasks.queued > 0 && `${tasks.queued} queued`,
  ].filter((part) => part !== false);
  return [`${tasks.completed}/${tasks.tasks} done`, ...more].join(", ");
}

function stepRow({ state, definition, tasks }: RunStepView): Html {
  const end = state.completedAt ?? state.failedAt ?? state.skippedAt ?? state.cancelledAt;
  // A wait step queues no task: it counts from when it started waiting.
  const start = state.startedAt ?? state.waitingAt;
  const after = definition.deps.length > 0 &&
    markup`<br><span class="muted">after ${definition.deps.join(", ")}</span>`;
  const wait = waitingFor(state);
  const waiting = wait !== null && markup`<br><span class="wait">${wait}</span>`;
  const stalled = (tasks?.stalled_requeues ?? 0) > 0 && ` (${tasks?.stalled_requeues} stalled)`;
  return markup`<tr data-step="${state.stepSlug}"><td>${state.stepSlug}</td>
<td>${definition.step_type}${after}</td><td>${statusBadge(state.status)}${waiting}</td>
<td class="num">${taskCounts(tasks)}</td><td class="num">${
    isWaitStep(definition.step_type) && tasks === null
      ? "-"
      : markup`${tasks?.attempts ?? 0}${stalled}`
  }</td>
<td>${formatTime(start)}</td><td class="num">${formatDuration(start, end)}</td>
<td class="last-error">${errorText(state.errorMessage ?? tasks?.last_error ?? null)}</td>
<td>${state.output === null ? "-" : jsonValue(state.output)}</td></tr>`;
}

/**
 * Renders the changing parts of the run page.
 *
 * @example Usage
 * ```ts ignore
 * import { runParts } from "./run_page.ts";
 *
 * const { dag } = runParts(view);
 * ```
 */
export function runParts(view: RunView): RunParts {
  const { run, steps, parent, children } = view;
  const via = run.startedVia !== run.flowSlug && ` (started via ${run.startedVia})`;
  const error = run.errorMessage !== null &&
    markup`<tr><th>Error</th><td>${errorText(run.errorMessage)}</td></tr>`;
  const cancelled = run.status === "cancelled" &&
    markup`<tr><th>Cancelled</th><td id="run-cancelled">by ${run.cancelledBy}: ${
      errorText(run.cancelReason ?? "(no reason given)")
    }</td></tr>`;
  const retried = run.retryCount > 0 &&
    markup`<tr><th>Retried</th><td id="run-retried">${run.retryCount}× (last ${
      formatTime(run.retriedAt)
    } by ${run.retriedBy})</td></tr>`;
  const parentRow = parent !== null &&
    markup`<tr><th>Parent</th><td id="run-parent"><a href="runs/${parent.run_id}">${parent.run_id}</a> (flow ${parent.flow_slug}, ${parent.status}), subflow step ${parent.step_slug}[${parent.task_index}]</td></tr>`;
  const childRows = children.length > 0 &&
    markup`<tr><th>Children</th><td id="run-children">${
      children.map((child) =>
        markup`<div data-child="${child.step_slug}/${child.task_index}">${child.step_slug}[${child.task_index}] <a href="runs/${child.run_id}">${child.run_id}</a> (flow ${child.flow_slug}) ${
          statusBadge(child.status)
        }</div>`
      )
    }</td></tr>`;
  const summary = markup`<table>
<tr><th>Status</th><td id="run-status" data-status="${run.status}">${statusBadge(run.status)} ${
    runActionButton(run.runId, run.status)
  }</td></tr>
<tr><th>Flow</th><td><a href="flows/${
    encodeURIComponent(run.flowSlug)
  }">${run.flowSlug}</a>${via}</td></tr>
<tr><th>Started</th><td>${formatTime(run.startedAt)}</td></tr>
<tr><th>Duration</th><td>${
    formatDuration(run.startedAt, run.completedAt ?? run.failedAt ?? run.cancelledAt)
  }</td></tr>
<tr><th>Steps left</th><td>${run.remainingSteps} of ${steps.length}</td></tr>${parentRow}${childRows}${error}${cancelled}${retried}
<tr><th>Input</th><td>${jsonValue(run.input)}</td></tr>
<tr><th>Output</th><td>${run.output === null ? "-" : jsonValue(run.output)}</td></tr></table>`;
  const dag = dagSvg(steps.map((step) => ({
    slug: step.state.stepSlug,
    deps: step.definition.deps,
    status: step.state.status,
    label: stepLabel(step),
    detail: waitingFor(step.state) ?? undefined,
    wait: isWaitStep(step.definition.step_type),
  })));
  const table = markup`<table><tr><th>Step</th><th>Type</th><th>Status</th><th>Tasks</th>
<th>Attempts</th><th>Started</th><th>Duration</th><th>Last error</th><th>Output</th></tr>
${steps.map(stepRow)}</table>`;
  return { summary, dag, steps: table, timeline: timelineSvg(view, view.timeline) };
}

/** Replaces each part with the markup the server sent; stops once the run is terminal. */
const LIVE_SCRIPT = `
const source = new EventSource(location.pathname + "/events");
const live = document.getElementById("live");
source.addEventListener("parts", (event) => {
  for (const [id, markup] of Object.entries(JSON.parse(event.data))) {
    document.getElementById(id).innerHTML = markup;
  }
});
source.addEventListener("end", () => { source.close(); live.textContent = "finished"; });
source.onerror = () => { live.textContent = "reconnecting…"; };
source.onopen = () => { live.textContent = "live"; };
// A browser holds few connections per host: a page left (or kept in the back/forward cache)
// must not keep its stream.
addEventListener("pagehide", () => source.close());
`;

/**
 * The Content-Security-Policy source that allows the run page's script and no other: an element
 * or attribute that slipped into a page could not run.
 */
export const LIVE_SCRIPT_SOURCE = `'sha256-${
  createHash("sha256").update(LIVE_SCRIPT).digest("base64")
}'`;

/**
 * Renders the run page: the parts, and for a run still going the script that keeps them current.
 *
 * @example Usage
 * ```ts ignore
 * import { runPage } from "./run_page.ts";
 *
 * const doc = runPage(view);
 * ```
 */
export function runPage(view: RunView): string {
  const parts = runParts(view);
  const going = view.run.status === "started";
  return page(
    `Run ${view.run.runId}`,
    markup`<h1>Run <code>${view.run.runId}</code>
<span id="live" class="muted">${going ? "connecting…" : "finished"}</span></h1>
<div id="summary">${parts.summary}</div>
<h2>Steps</h2><div id="dag">${parts.dag}</div>
<div id="steps">${parts.steps}</div>
<h2>Timeline</h2>
<p class="muted" id="timeline-key">Time from the run's start.
<span class="key queued"></span> queued <span class="key attempt"></span> attempt
<span class="key retries"></span> earlier attempts and retries
<span class="key backoff"></span> retry backoff <span class="key wait"></span> wait
<span class="key cancel"></span> cancel; hover a bar for its times and error.</p>
<div id="timeline">${parts.timeline}</div>
${going && markup`<script type="module">${new Html(LIVE_SCRIPT)}</script>`}`,
  );
}
