/**
 * The signals page: the kept signals newest first (`sluice.signals`), filtered by key, run and
 * state, and a form that sends one (docs/waits.md#signals).
 *
 * @module
 */

import type { SignalFilter, SignalRow } from "../db/ops_queries.ts";
import { type Html, markup } from "./escape.ts";
import { formatSeconds, formatTime, jsonPreview } from "./format.ts";
import { page } from "./page.ts";

/** What the signals page shows. */
export interface SignalsListing {
  /** The filter the rows were read with. */
  readonly filter: SignalFilter;
  /** The signals, newest first. */
  readonly signals: readonly SignalRow[];
}

/** The page's badge colour class of a signal state. */
const STATE_CLASS: Readonly<Record<SignalRow["state"], string>> = {
  pending: "s-waiting",
  released: "s-completed",
  expired: "s-cancelled",
};

function option(value: string, selected: string | null): Html {
  return markup`<option value="${value}"${value === (selected ?? "") && markup` selected`}>${
    value === "" ? "any" : value
  }</option>`;
}

function signalRow(s: SignalRow): Html {
  const payload = jsonPreview(s.payload, 80, 65_536);
  return markup`<tr data-signal="${s.signal_id}" data-state="${s.state}"><td>${s.signal_id}</td>
<td><a href="signals?key=${encodeURIComponent(s.signal_key)}">${s.signal_key}</a></td>
<td><span class="badge ${STATE_CLASS[s.state]}">${s.state}</span></td>
<td class="num">${formatSeconds(s.age_seconds)}</td>
<td class="num${
    s.state === "pending" && s.waiting_steps === 0 && " missing"
  }">${s.waiting_steps}</td>
<td>${formatTime(s.sent_at)}<br><span class="muted">by ${s.sent_by}</span></td>
<td>${
    s.state === "released"
      ? `released ${formatTime(s.consumed_at)}`
      : s.state === "pending"
      ? `kept until ${formatTime(s.expires_at)}`
      : `expired ${formatTime(s.expires_at)}`
  }</td>
<td>${
    payload.cut
      ? markup`<details><summary>${payload.preview}</summary><pre>${payload.full}</pre></details>`
      : markup`<code>${payload.preview}</code>`
  }</td></tr>`;
}

/**
 * Renders the signals page.
 *
 * @example Usage
 * ```ts ignore
 * import { signalsPage } from "./signals_page.ts";
 *
 * const doc = signalsPage({ filter, signals });
 * ```
 */
export function signalsPage({ filter, signals }: SignalsListing): string {
  const table = signals.length === 0
    ? markup`<p class="muted">No signals match.</p>`
    : markup`<table id="signals"><tr><th>Signal</th><th>Key</th><th>State</th><th>Age</th>
<th>Steps waiting</th><th>Sent</th><th>Lifetime</th><th>Payload</th></tr>${
      signals.map(signalRow)
    }</table>`;
  return page(
    "Signals",
    markup`<h1>Signals</h1>
<p class="muted">A signal completes the steps waiting on its key. One nobody waits on yet is kept
7 days (<em>pending</em>) for a wait of a run started before it; a pending signal with no step
waiting is often a mistyped key or a cancelled run's. <code>prune</code> deletes expired signals and
those released longer ago than its interval.</p>
<form class="filters" method="get" action="signals">
<label>Key <input name="key" value="${filter.key ?? ""}"></label>
<label>Run <input name="run" size="36" placeholder="run id" value="${filter.runId ?? ""}"></label>
<label>State <select name="state">${
      ["", "pending", "released", "expired"].map((state) => option(state, filter.state))
    }</select></label>
<button>Filter</button></form>
${table}
${signals.length === filter.limit && markup`<p class="muted">The newest ${filter.limit} shown.</p>`}
<h2>Send a signal</h2>
<form id="send" method="post" action="signals/send">
<label>Key <input name="key" required maxlength="1000"></label>
<label>Signal id <input name="signal_id" required maxlength="1000"></label>
<label>Payload (JSON) <input name="payload" value="null"></label>
<button id="send-signal">Send</button></form>`,
  );
}
