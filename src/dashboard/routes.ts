/**
 * The dashboard's route table: which handler answers which method and path (below the random
 * base path, after the token check of server.ts). Adding a page or an action is one entry here.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import {
  countRunsByStatusSince,
  readFlow,
  readFlowLastHour,
  readFlowSteps,
  readFlowSummaries,
  readFunctionOverview,
  readScheduleOverview,
  readWaitOnlyQueues,
} from "../db/dashboard_queries.ts";
import {
  listRuns,
  listSignals,
  readQueueHealth,
  readRouteCoverage,
  SIGNAL_STATES,
  type SignalState,
  workerFunctionExists,
} from "../db/ops_queries.ts";
import { isUuid } from "../dsl/uuid.ts";
import { LimitExceededError, SignalIdConflictError } from "../client/errors.ts";
import { sendSignal } from "../client/send_signal.ts";
import { ACTIONS, isActionName } from "./actions.ts";
import { confirmPage, resultPage } from "./action_page.ts";
import { flowPage } from "./flow_page.ts";
import { overviewPage } from "./overview_page.ts";
import { htmlResponse, problem } from "./response.ts";
import { runChanges } from "./run_changes.ts";
import { runPage, runParts } from "./run_page.ts";
import { readRunView } from "./run_view.ts";
import { runsPage } from "./runs_page.ts";
import { signalsPage } from "./signals_page.ts";
import { schedulesPage } from "./schedules_page.ts";
import { isWaitStep } from "./step_kinds.ts";
import { isRunActionName, runActionConfirmPage, takeRunAction } from "./run_actions.ts";

/** What the handlers of one running dashboard share. */
export interface DashboardState {
  /** The database. */
  readonly sql: Sql;
  /** Where operator actions and server errors are logged. */
  readonly log: (line: string) => void;
  /** Milliseconds after which a live run is read again without an event of it. */
  readonly pollMs: number | undefined;
  /** Aborted when the dashboard closes: ends every live stream. */
  readonly shutdown: AbortSignal;
  /** The live streams open now, each ended by aborting its controller. */
  readonly streams: Set<AbortController>;
}

/** A request as a handler sees it. */
export interface RouteRequest {
  /** The request. */
  readonly request: Request;
  /** Its URL, for the query parameters. */
  readonly url: URL;
  /** The path below the base path, e.g. `/runs`. */
  readonly path: string;
  /** The route pattern's capture groups, e.g. the run id of `/runs/<id>`. */
  readonly params: readonly string[];
  /** The client's address, for the action log. */
  readonly remote: string;
  /** The running dashboard. */
  readonly state: DashboardState;
}

/** One entry of {@linkcode ROUTES}. */
export interface Route {
  /** The HTTP method it answers. */
  readonly method: "GET" | "POST";
  /** The whole path below the base path; its capture groups become `params`. */
  readonly pattern: RegExp;
  /** Answers the request. */
  readonly handler: (request: RouteRequest) => Promise<Response> | Response;
}

const RUN_STATUSES = ["started", "completed", "failed", "cancelled"];
const RUNS_PER_PAGE = 50;
const SIGNALS_PER_PAGE = 100;

function noSuchFunction(action: string, name: string): Response {
  return problem(
    404,
    "No such worker function",
    `Cannot ${action} ${JSON.stringify(name)}: no worker function has that name`,
  );
}

/** A database error about the value it was given (SQLSTATE class 22: data exception). */
function isDataException(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === "string" && code.startsWith("22");
}

/** The message of anything thrown. */
export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `/`: worker functions, queues, route coverage, flows and the last hour's runs. */
async function overview({ state: { sql } }: RouteRequest): Promise<Response> {
  const [functions, queues, coverage, flows, runsLastHour, waitOnlyQueues] = [
    await readFunctionOverview(sql),
    await readQueueHealth(sql),
    await readRouteCoverage(sql),
    await readFlowSummaries(sql),
    await countRunsByStatusSince(sql, "1 hour"),
    await readWaitOnlyQueues(sql),
  ];
  return htmlResponse(
    overviewPage({ functions, queues, coverage, flows, runsLastHour, waitOnlyQueues }),
  );
}

/** `/runs?flow=&status=&since=&offset=`: the latest runs, 50 a page. */
async function runs({ url, state: { sql } }: RouteRequest): Promise<Response> {
  const param = (name: string) => {
    const value = url.searchParams.get(name)?.trim() ?? "";
    return value === "" ? null : value;
  };
  const status = param("status");
  if (status !== null && !RUN_STATUSES.includes(status)) {
    return problem(
      400,
      "Bad filter",
      `Cannot list runs: status must be one of ${RUN_STATUSES.join(", ")}, got ${
        JSON.stringify(status)
      }`,
    );
  }
  const offsetText = param("offset") ?? "0";
  if (!/^\d{1,9}$/.test(offsetText)) {
    return problem(
      400,
      "Bad filter",
      `Cannot list runs: offset must be a whole number, got ${JSON.stringify(offsetText)}`,
    );
  }
  const filter = {
    flow: param("flow"),
    status,
    since: param("since"),
    limit: RUNS_PER_PAGE,
    offset: Number(offsetText),
  };
  try {
    const rows = await listRuns(sql, { ...filter, limit: RUNS_PER_PAGE + 1 });
    const flows = (await readFlowSummaries(sql)).map((flow) => flow.flow_slug);
    return htmlResponse(runsPage({
      filter,
      runs: rows.slice(0, RUNS_PER_PAGE),
      more: rows.length > RUNS_PER_PAGE,
      flows,
    }));
  } catch (error) {
    if (!isDataException(error)) throw error;
    return problem(
      400,
      "Bad filter",
      `Cannot list runs: since must be an interval (1 hour) or a timestamp ` +
        `(2026-11-30T12:00Z), got ${JSON.stringify(filter.since)}: ${error.message}`,
    );
  }
}

/** `/signals?key=&run=&state=`: the newest 100 kept signals. */
async function signals({ url, state: { sql } }: RouteRequest): Promise<Response> {
  const param = (name: string) => {
    const value = url.searchParams.get(name)?.trim() ?? "";
    return value === "" ? null : value;
  };
  const state = param("state");
  if (state !== null && !(SIGNAL_STATES as readonly string[]).includes(state)) {
    return problem(
      400,
      "Bad filter",
      `Cannot list signals: state must be one of ${SIGNAL_STATES.join(", ")}, got ${
        JSON.stringify(state)
      }`,
    );
  }
  const runId = param("run");
  if (runId !== null && !isUuid(runId)) {
    return problem(
      400,
      "Bad filter",
      `Cannot list signals: run must be a run id (a UUID), got ${JSON.stringify(runId)}`,
    );
  }
  // A key is the application's text: kept as typed, spaces included.
  const key = url.searchParams.get("key") || null;
  const filter = { key, runId, state: state as SignalState | null, limit: SIGNALS_PER_PAGE };
  return htmlResponse(signalsPage({ filter, signals: await listSignals(sql, filter) }));
}

/** `POST /signals/send` with `key`, `signal_id` and `payload` (JSON): sends it and logs it. */
async function sendSignalRoute(request: RouteRequest): Promise<Response> {
  const { state } = request;
  const origin = request.request.headers.get("origin");
  if (origin !== null && origin !== request.url.origin) {
    return problem(403, "Forbidden", `Cannot send a signal from origin ${origin}`);
  }
  const form = await readForm(request.request, "send a signal");
  if (form instanceof Response) return form;
  const key = String(form.get("key") ?? "");
  const signalId = String(form.get("signal_id") ?? "");
  const payloadText = String(form.get("payload") ?? "").trim() || "null";
  let payload: unknown;
  try {
    payload = JSON.parse(payloadText);
  } catch (error) {
    return problem(
      400,
      "Cannot send the signal",
      `Cannot send signal ${JSON.stringify(signalId)}: the payload is not JSON: ${message(error)}`,
    );
  }
  try {
    const result = await sendSignal(state.sql, { key, payload, signalId });
    const outcome = result.outcome === "duplicate"
      ? `Signal ${JSON.stringify(signalId)} was sent before; nothing changed.`
      : result.released > 0
      ? `Sent signal ${JSON.stringify(signalId)}: released ${result.released} ${
        result.released === 1 ? "step" : "steps"
      } waiting on ${JSON.stringify(key)}.`
      : `Sent signal ${JSON.stringify(signalId)}: no step waits on ${
        JSON.stringify(key)
      } now; it is kept 7 days for a wait of a run started before it.`;
    state.log(
      `${new Date().toISOString()} dashboard action send-signal ${JSON.stringify(key)} ${
        JSON.stringify(signalId)
      } from ${request.remote}: ${outcome}`,
    );
    return htmlResponse(resultPage("Done", outcome));
  } catch (error) {
    if (
      error instanceof SignalIdConflictError || error instanceof LimitExceededError ||
      error instanceof TypeError
    ) {
      return problem(400, "Cannot send the signal", error.message);
    }
    throw error;
  }
}

/** The 404 for a run path whose id is no UUID; `null` for a UUID. */
function notARunId(runId: string): Response | null {
  return isUuid(runId)
    ? null
    : problem(404, "No such run", `Cannot show run ${JSON.stringify(runId)}: not a run id`);
}

/** `/runs/<run_id>`: the run's DAG and steps, kept current by {@linkcode runEvents}. */
async function run({ params: [runId], state: { sql } }: RouteRequest): Promise<Response> {
  const refused = notARunId(runId);
  if (refused !== null) return refused;
  const view = await readRunView(sql, runId);
  if (view === null) {
    return problem(404, "No such run", `Cannot show run ${runId}: no run has that id`);
  }
  return htmlResponse(runPage(view));
}

/** `/runs/<run_id>/events`: the live parts of a run page as server-sent events, until terminal. */
function runEvents({ params: [runId], state }: RouteRequest): Response {
  const refused = notARunId(runId);
  if (refused !== null) return refused;
  const { sql, streams, log } = state;
  const stop = new AbortController();
  const signal = AbortSignal.any([stop.signal, state.shutdown]);
  streams.add(stop);
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (event: string, data: string) =>
        controller.enqueue(encoder.encode(`event: ${event}\ndata: ${data}\n\n`));
      let sent = "";
      try {
        for await (const _ of runChanges(sql, runId, { signal, intervalMs: state.pollMs })) {
          const view = await readRunView(sql, runId);
          if (view === null || signal.aborted) break;
          const parts = runParts(view);
          const data = JSON.stringify({
            summary: String(parts.summary),
            dag: String(parts.dag),
            steps: String(parts.steps),
            timeline: String(parts.timeline),
          });
          if (data !== sent) send("parts", data);
          sent = data;
          if (view.run.status !== "started") break;
        }
        if (!signal.aborted) send("end", "{}");
        controller.close();
      } catch (error) {
        if (!signal.aborted) {
          log(`dashboard: live view of run ${runId} stopped: ${message(error)}`);
          controller.error(error);
        }
      } finally {
        streams.delete(stop);
      }
    },
    cancel() {
      stop.abort();
    },
  });
  return new Response(body, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-store" },
  });
}

/** `/flows/<flow_slug>`: a compiled flow's options, steps and their queues. */
async function flow({ params: [flowSlug], state: { sql } }: RouteRequest): Promise<Response> {
  // Slugs are plain identifiers (no escaping in a link to them): an escaped path names none.
  const row = await readFlow(sql, flowSlug);
  if (row === null) {
    return problem(
      404,
      "No such flow",
      `Cannot show flow ${JSON.stringify(flowSlug)}: not compiled`,
    );
  }
  const steps = await readFlowSteps(sql, flowSlug);
  // A wait step's queue carries no message and needs no worker: not listed as if it were starved.
  const names = new Set(
    steps.filter((step) => !isWaitStep(step.step_type)).map((step) => step.queue_name),
  );
  const queues = (await readQueueHealth(sql)).filter((queue) => names.has(queue.queue_name));
  const lastHour = await readFlowLastHour(sql, flowSlug);
  return htmlResponse(flowPage({ flow: row, steps, queues, lastHour }));
}

/** `/schedules`: every schedule, its next and last fire. */
async function schedules({ state: { sql } }: RouteRequest): Promise<Response> {
  return htmlResponse(schedulesPage(await readScheduleOverview(sql)));
}

/**
 * The most bytes an action's form body may have: its fields are a function name or a reason of at
 * most 1,000 characters, so anything much longer is not the dashboard's own form.
 */
export const MAX_FORM_BYTES = 16 * 1024;

/**
 * Reads an action's form, at most {@linkcode MAX_FORM_BYTES} of it (a longer body is cut off and
 * answered 413 without being read whole), or answers 400 for a body that is not a form.
 */
async function readForm(request: Request, what: string): Promise<FormData | Response> {
  const tooLarge = () =>
    problem(413, "Form too large", `Cannot ${what}: the form is over ${MAX_FORM_BYTES} bytes`);
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_FORM_BYTES) {
    await request.body?.cancel().catch(() => {});
    return tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let length = 0;
  const reader = request.body?.getReader();
  while (reader !== undefined) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > MAX_FORM_BYTES) {
      await reader.cancel().catch(() => {});
      return tooLarge();
    }
    chunks.push(value);
  }
  const body = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  const type = request.headers.get("content-type") ?? "";
  try {
    return await new Response(body, { headers: { "content-type": type } }).formData();
  } catch {
    return problem(
      400,
      "Bad form",
      `Cannot ${what}: the body is not a form (content type ${JSON.stringify(type)})`,
    );
  }
}

/** `GET /actions/<action>?function=<name>`: asks for confirmation; changes nothing. */
async function confirmAction({ params: [action], path, url, state }: RouteRequest) {
  if (!isActionName(action)) return problem(404, "Not found", `Nothing at ${path}`);
  const name = url.searchParams.get("function") ?? "";
  if (!(await workerFunctionExists(state.sql, name))) return noSuchFunction(action, name);
  return htmlResponse(confirmPage(action, name, ACTIONS[action].question(name)));
}

/** `POST /actions/<action>` with `function=<name>`: carries the action out and logs it. */
async function takeAction(request: RouteRequest): Promise<Response> {
  const { params: [action], path, state } = request;
  if (!isActionName(action)) return problem(404, "Not found", `No action at ${path}`);
  // Same-site cookies keep other sites' forms out; a stated foreign origin is refused too.
  const origin = request.request.headers.get("origin");
  if (origin !== null && origin !== request.url.origin) {
    return problem(403, "Forbidden", `Cannot ${action} from origin ${origin}`);
  }
  const form = await readForm(request.request, action);
  if (form instanceof Response) return form;
  const name = String(form.get("function") ?? "");
  if (!(await workerFunctionExists(state.sql, name))) return noSuchFunction(action, name);
  const outcome = await ACTIONS[action].run(state.sql, name);
  state.log(
    `${new Date().toISOString()} dashboard action ${action} ${
      JSON.stringify(name)
    } from ${request.remote}: ${outcome}`,
  );
  return htmlResponse(resultPage("Done", outcome));
}

/** `GET /runs/<run_id>/<cancel|retry>`: asks for confirmation; changes nothing. */
async function confirmRunAction({ params: [runId, action], path, state }: RouteRequest) {
  if (!isRunActionName(action)) return problem(404, "Not found", `Nothing at ${path}`);
  const refused = notARunId(runId);
  if (refused !== null) return refused;
  if ((await readRunView(state.sql, runId)) === null) {
    return problem(404, "No such run", `Cannot ${action} run ${runId}: no run has that id`);
  }
  return htmlResponse(runActionConfirmPage(action, runId));
}

/** `POST /runs/<run_id>/<cancel|retry>` (a cancel with `reason=`): carries it out and logs it. */
async function takeRunActionRoute(request: RouteRequest): Promise<Response> {
  const { params: [runId, action], path, state } = request;
  if (!isRunActionName(action)) return problem(404, "Not found", `No action at ${path}`);
  const origin = request.request.headers.get("origin");
  if (origin !== null && origin !== request.url.origin) {
    return problem(403, "Forbidden", `Cannot ${action} run ${runId} from origin ${origin}`);
  }
  const refused = notARunId(runId);
  if (refused !== null) return refused;
  const form = await readForm(request.request, `${action} run ${runId}`);
  if (form instanceof Response) return form;
  const reason = String(form.get("reason") ?? "");
  const outcome = await takeRunAction(state.sql, action, runId, reason);
  state.log(
    `${new Date().toISOString()} dashboard action ${action} run ${runId} from ` +
      `${request.remote}: ${outcome.message}`,
  );
  if (outcome.status !== 200) {
    return problem(outcome.status, `Cannot ${action} the run`, outcome.message);
  }
  return htmlResponse(resultPage("Done", outcome.message));
}

/** Every page and action, matched in order against the method and the path. */
export const ROUTES: readonly Route[] = [
  { method: "GET", pattern: /^\/$/, handler: overview },
  { method: "GET", pattern: /^\/runs$/, handler: runs },
  { method: "GET", pattern: /^\/runs\/([^/]+)$/, handler: run },
  { method: "GET", pattern: /^\/runs\/([^/]+)\/events$/, handler: runEvents },
  { method: "GET", pattern: /^\/runs\/([^/]+)\/(cancel|retry)$/, handler: confirmRunAction },
  { method: "POST", pattern: /^\/runs\/([^/]+)\/(cancel|retry)$/, handler: takeRunActionRoute },
  { method: "GET", pattern: /^\/flows\/([^/]+)$/, handler: flow },
  { method: "GET", pattern: /^\/signals$/, handler: signals },
  { method: "POST", pattern: /^\/signals\/send$/, handler: sendSignalRoute },
  { method: "GET", pattern: /^\/schedules$/, handler: schedules },
  { method: "GET", pattern: /^\/actions\/([a-z-]+)$/, handler: confirmAction },
  { method: "POST", pattern: /^\/actions\/([a-z-]+)$/, handler: takeAction },
];

const METHODS = [...new Set(ROUTES.map((route) => route.method))];

/**
 * Answers a request whose path below the base path is `path` by the first route of
 * {@linkcode ROUTES} that matches its method and path: 405 for a method no route answers, 404
 * for a path none matches.
 */
export async function answer(
  request: Request,
  path: string,
  remote: string,
  state: DashboardState,
): Promise<Response> {
  if (!(METHODS as string[]).includes(request.method)) {
    return new Response("Method not allowed", {
      status: 405,
      headers: { allow: METHODS.join(", ") },
    });
  }
  for (const route of ROUTES) {
    if (route.method !== request.method) continue;
    const match = route.pattern.exec(path);
    if (match === null) continue;
    const url = new URL(request.url);
    return await route.handler({ request, url, path, params: match.slice(1), remote, state });
  }
  return problem(
    404,
    "Not found",
    `${request.method === "POST" ? "No action" : "Nothing"} at ${path}`,
  );
}
