/**
 * The dashboard's run actions, the same the CLI has: cancel a started run (`ops run cancel`) and
 * retry a failed or cancelled one (`ops run retry`). Each asks for confirmation first (a page that
 * changes nothing), then posts; what it did is shown in a sentence.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { cancelRun } from "../client/cancel_run.ts";
import { RunNotFoundError, RunWorkersMissingError } from "../client/errors.ts";
import { retryRun } from "../client/retry_run.ts";
import type { RunState } from "../client/get_run.ts";
import { type Html, markup } from "./escape.ts";
import { page } from "./page.ts";

/** The name of a run action in its URL, `/runs/<run_id>/<name>`. */
export type RunActionName = "cancel" | "retry";

/**
 * Whether `name` is a run action.
 *
 * @example Usage
 * ```ts
 * import { isRunActionName } from "./run_actions.ts";
 *
 * isRunActionName("cancel"); // true
 * ```
 */
export function isRunActionName(name: string): name is RunActionName {
  return name === "cancel" || name === "retry";
}

/**
 * The action a run in this status offers: cancel while it runs, retry once it failed or was
 * cancelled; none for a completed run.
 *
 * @example Usage
 * ```ts
 * import { runActionFor } from "./run_actions.ts";
 *
 * runActionFor("failed"); // "retry"
 * ```
 */
export function runActionFor(status: RunState["status"]): RunActionName | null {
  if (status === "started") return "cancel";
  if (status === "failed" || status === "cancelled") return "retry";
  return null;
}

/**
 * The button of a run's summary that opens the confirmation of its action (empty when none).
 *
 * @example Usage
 * ```ts
 * import { runActionButton } from "./run_actions.ts";
 *
 * const button = runActionButton("6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11", "started");
 * ```
 */
export function runActionButton(runId: string, status: RunState["status"]): Html | string {
  const action = runActionFor(status);
  if (action === null) return "";
  return markup`<form class="inline" method="get" action="runs/${runId}/${action}">
<button id="run-${action}">${action === "cancel" ? "Cancel run…" : "Retry run…"}</button></form>`;
}

/**
 * The confirmation page of a run action: what it will do, and a form that posts it (a cancel asks
 * for its reason).
 *
 * @example Usage
 * ```ts
 * import { runActionConfirmPage } from "./run_actions.ts";
 *
 * const doc = runActionConfirmPage("cancel", "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11");
 * ```
 */
export function runActionConfirmPage(action: RunActionName, runId: string): string {
  const question = action === "cancel"
    ? `Cancel run ${runId}? Its queued tasks are cancelled, its running handlers are aborted at ` +
      "their worker's next heartbeat and their results are discarded; no further step starts."
    : `Retry run ${runId}? Its failed and cancelled tasks run again (attempt numbers go on); ` +
      "steps that completed keep their outputs and do not run again.";
  const reason = action === "cancel" &&
    markup`<p><label>Reason <input name="reason" id="reason" required maxlength="1000"></label></p>`;
  return page(
    "Confirm",
    markup`<h1>Confirm</h1><p id="question">${question}</p>
<form method="post" action="runs/${runId}/${action}">${reason}
<button id="confirm">Yes, ${action} the run</button> <a href="runs/${runId}">Back</a></form>`,
  );
}

/** `1 task`, `2 tasks`. */
function tasks(n: number): string {
  return `${n} ${n === 1 ? "task" : "tasks"}`;
}

/** What a run action did: the sentence to show, and the HTTP status. */
export interface RunActionOutcome {
  /** 200 when the action was carried out or was not needed, 400 or 404 when refused. */
  readonly status: number;
  /** What happened, in a sentence. */
  readonly message: string;
}

/**
 * Carries a run action out. A no-op (a finished run cancelled, a completed run retried) is said
 * as such; a refusal (no such run, no live worker for a retry, a cancel without a reason) changes
 * nothing.
 *
 * @example Usage
 * ```ts ignore
 * import { takeRunAction } from "./run_actions.ts";
 *
 * const { message } = await takeRunAction(sql, "cancel", runId, "duplicate order");
 * ```
 */
export async function takeRunAction(
  sql: Sql,
  action: RunActionName,
  runId: string,
  reason: string,
): Promise<RunActionOutcome> {
  try {
    if (action === "cancel") {
      if (reason.trim() === "") {
        return { status: 400, message: `Cannot cancel run ${runId}: give a reason` };
      }
      const result = await cancelRun(sql, runId, { reason });
      return {
        status: 200,
        message: result.outcome === "cancelled"
          ? `Cancelled run ${runId} (${tasks(result.tasks)} stopped): ${reason}`
          : `Run ${runId} had already ${
            result.status === "cancelled" ? "been cancelled" : result.status
          }; nothing changed.`,
      };
    }
    const result = await retryRun(sql, runId);
    return {
      status: 200,
      message: result.outcome === "retried"
        ? `Retried run ${runId} (retry ${result.retryCount}): ${tasks(result.tasks)} queued ` +
          `again; status ${result.status}.`
        : `Run ${runId} is ${result.status}, not failed or cancelled; nothing changed.`,
    };
  } catch (error) {
    if (error instanceof RunNotFoundError) return { status: 404, message: error.message };
    // sluice.check_cancel_reason refuses an over-long reason: the operator's input, not a fault.
    if ((error as { code?: unknown }).code === "22023") {
      return { status: 400, message: (error as Error).message };
    }
    if (error instanceof RunWorkersMissingError) {
      return {
        status: 400,
        message: `${error.message}; start its workers (or retry with ` +
          "`sluice run retry --force`, which queues the work for them)",
      };
    }
    throw error;
  }
}
