/**
 * `startDashboard()`: the dashboard's HTTP server. Pages are rendered on the server from the
 * monitoring views; the run page stays current through server-sent events.
 *
 * @module
 */

import type { Sql } from "../db/postgres.ts";
import {
  countRunsByStatusSince,
  readFlow,
  readFlowSteps,
  readFlowSummaries,
  readFunctionOverview,
} from "../db/dashboard_queries.ts";
import {
  listRuns,
  readQueueHealth,
  readRouteCoverage,
  workerFunctionExists,
} from "../db/ops_queries.ts";
import { isUuid } from "../dsl/uuid.ts";
import { ACTIONS, isActionName } from "./actions.ts";
import { confirmPage, resultPage } from "./action_page.ts";
import { MIN_SECRET_LENGTH, newBasePath, newToken, TokenCheck } from "./auth.ts";
import { flowPage } from "./flow_page.ts";
import { overviewPage } from "./overview_page.ts";
import { withBase } from "./page.ts";
import { runChanges } from "./run_changes.ts";
import { LIVE_SCRIPT_SOURCE, runPage, runParts } from "./run_page.ts";
import { readRunView } from "./run_view.ts";
import { runsPage } from "./runs_page.ts";

/** Options of {@linkcode startDashboard}. */
export interface DashboardOptions {
  /**
   * The port to listen on; `0` picks a free one.
   *
   * @default {4300}
   */
  readonly port?: number;
  /**
   * The address to listen on. One that is not loopback needs a `secret`.
   *
   * @default {"127.0.0.1"}
   */
  readonly hostname?: string;
  /**
   * The token requests must carry, at least 16 characters.
   *
   * @default {a random token}
   */
  readonly secret?: string;
  /**
   * Milliseconds after which a run shown live is read again without an event of it (attempts
   * and errors of a retried task send none).
   *
   * @default {2000}
   */
  readonly pollMs?: number;
  /**
   * Where operator actions and server errors are logged, one line each.
   *
   * @default {console.log}
   */
  readonly log?: (line: string) => void;
}

/** A running dashboard. */
export interface Dashboard extends AsyncDisposable {
  /** The address to open: the root with `/?token=...`. */
  readonly url: string;
  /** The origin, e.g. `http://127.0.0.1:4300`. */
  readonly origin: string;
  /**
   * Where every page lives: the origin and this start's random base path, no trailing slash,
   * e.g. `http://127.0.0.1:4300/5d41402abc4b2a76b9719d911017c592`. Anything outside it is 404.
   */
  readonly root: string;
  /** The token requests must carry. */
  readonly token: string;
  /** Stops listening and ends every live stream. */
  close(): Promise<void>;
}

/** Thrown by {@linkcode startDashboard} for options it cannot start with. */
export class DashboardOptionsError extends Error {
  /** The offending option. */
  readonly option: string;
  /** Its value. */
  readonly value: unknown;
  /** Describes the offending option. */
  constructor(option: string, value: unknown, message: string) {
    super(message);
    this.name = "DashboardOptionsError";
    this.option = option;
    this.value = value;
  }
}

const LOOPBACK = ["127.0.0.1", "::1", "localhost"];
const RUN_STATUSES = ["started", "completed", "failed"];
const RUNS_PER_PAGE = 50;

function htmlResponse(body: string, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      // The inline style is ours; the one script that may run is the run page's, by its hash.
      "content-security-policy": `default-src 'self'; style-src 'unsafe-inline'; ` +
        `script-src ${LIVE_SCRIPT_SOURCE}; img-src 'self' data:; frame-ancestors 'none'; ` +
        `base-uri 'self'`,
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
      ...headers,
    },
  });
}

function problem(status: number, title: string, message: string): Response {
  return htmlResponse(resultPage(title, message), status);
}

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

function validateOptions(options: DashboardOptions): void {
  const hostname = options.hostname ?? "127.0.0.1";
  const port = options.port ?? 4300;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new DashboardOptionsError(
      "port",
      port,
      `Cannot start the dashboard: port must be a whole number from 0 to 65535, got ${
        JSON.stringify(port)
      }`,
    );
  }
  const { secret } = options;
  if (secret !== undefined && secret.length < MIN_SECRET_LENGTH) {
    throw new DashboardOptionsError(
      "secret",
      "(hidden)",
      `Cannot start the dashboard: the secret must have at least ${MIN_SECRET_LENGTH} ` +
        `characters, got ${secret.length}`,
    );
  }
  if (!LOOPBACK.includes(hostname) && secret === undefined) {
    throw new DashboardOptionsError(
      "hostname",
      hostname,
      `Cannot start the dashboard on ${JSON.stringify(hostname)}: an address other machines ` +
        "can reach needs a configured secret (--secret or SLUICE_DASHBOARD_SECRET); " +
        "the default 127.0.0.1 needs none",
    );
  }
}

/**
 * Starts the dashboard on `sql`'s database.
 *
 * @param sql The database client (the dashboard does not close it).
 * @param options Port, address, secret and poll interval.
 * @returns The running dashboard; close it (or `await using`) to stop.
 * @throws {DashboardOptionsError} For a bad port, a short secret, or a non-loopback address
 * without a secret; nothing listens then.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { startDashboard } from "./server.ts";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * await using dashboard = startDashboard(sql, { port: 0 });
 * console.log(`open ${dashboard.url}`);
 * ```
 */
export function startDashboard(sql: Sql, options: DashboardOptions = {}): Dashboard {
  validateOptions(options);
  const log = options.log ?? console.log;
  const token = options.secret ?? newToken();
  const basePath = newBasePath();
  const streams = new Set<AbortController>();
  const shutdown = new AbortController();

  /** Answers a request whose path, below the base path, is `path`. */
  async function route(request: Request, path: string, remote: string): Promise<Response> {
    const url = new URL(request.url);
    if (request.method === "POST") {
      const action = /^\/actions\/([a-z-]+)$/.exec(path)?.[1];
      if (action === undefined || !isActionName(action)) {
        return problem(404, "Not found", `No action at ${path}`);
      }
      // Same-site cookies keep other sites' forms out; a stated foreign origin is refused too.
      const origin = request.headers.get("origin");
      if (origin !== null && origin !== url.origin) {
        return problem(403, "Forbidden", `Cannot ${action} from origin ${origin}`);
      }
      const name = String((await request.formData()).get("function") ?? "");
      if (!(await workerFunctionExists(sql, name))) return noSuchFunction(action, name);
      const outcome = await ACTIONS[action].run(sql, name);
      log(
        `${new Date().toISOString()} dashboard action ${action} ${
          JSON.stringify(name)
        } from ${remote}: ${outcome}`,
      );
      return htmlResponse(resultPage("Done", outcome));
    }
    if (request.method !== "GET") {
      return new Response("Method not allowed", { status: 405, headers: { allow: "GET, POST" } });
    }
    if (path === "/") {
      const [functions, queues, coverage, flows, runsLastHour] = [
        await readFunctionOverview(sql),
        await readQueueHealth(sql),
        await readRouteCoverage(sql),
        await readFlowSummaries(sql),
        await countRunsByStatusSince(sql, "1 hour"),
      ];
      return htmlResponse(overviewPage({ functions, queues, coverage, flows, runsLastHour }));
    }
    if (path === "/runs") return await runsRoute(url);
    const runMatch = /^\/runs\/([^/]+)(\/events)?$/.exec(path);
    if (runMatch !== null) {
      const runId = runMatch[1];
      if (!isUuid(runId)) {
        return problem(
          404,
          "No such run",
          `Cannot show run ${JSON.stringify(runId)}: not a run id`,
        );
      }
      if (runMatch[2] !== undefined) return runEvents(runId);
      const view = await readRunView(sql, runId);
      if (view === null) {
        return problem(404, "No such run", `Cannot show run ${runId}: no run has that id`);
      }
      return htmlResponse(runPage(view));
    }
    const flowSlug = /^\/flows\/([^/]+)$/.exec(path)?.[1];
    // Slugs are plain identifiers (no escaping in a link to them): an escaped path names none.
    if (flowSlug !== undefined) return await flowRoute(flowSlug);
    const action = /^\/actions\/([a-z-]+)$/.exec(path)?.[1];
    if (action !== undefined && isActionName(action)) {
      const name = url.searchParams.get("function") ?? "";
      if (!(await workerFunctionExists(sql, name))) return noSuchFunction(action, name);
      return htmlResponse(confirmPage(action, name, ACTIONS[action].question(name)));
    }
    return problem(404, "Not found", `Nothing at ${path}`);
  }

  async function runsRoute(url: URL): Promise<Response> {
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

  async function flowRoute(flowSlug: string): Promise<Response> {
    const flow = await readFlow(sql, flowSlug);
    if (flow === null) {
      return problem(
        404,
        "No such flow",
        `Cannot show flow ${JSON.stringify(flowSlug)}: not compiled`,
      );
    }
    const steps = await readFlowSteps(sql, flowSlug);
    const names = new Set(steps.map((step) => step.queue_name));
    const queues = (await readQueueHealth(sql)).filter((queue) => names.has(queue.queue_name));
    return htmlResponse(flowPage({ flow, steps, queues }));
  }

  /** The live parts of a run page as server-sent events, until the run is terminal. */
  function runEvents(runId: string): Response {
    const stop = new AbortController();
    const signal = AbortSignal.any([stop.signal, shutdown.signal]);
    streams.add(stop);
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        const send = (event: string, data: string) =>
          controller.enqueue(encoder.encode(`event: ${event}\ndata: ${data}\n\n`));
        let sent = "";
        try {
          for await (const _ of runChanges(sql, runId, { signal, intervalMs: options.pollMs })) {
            const view = await readRunView(sql, runId);
            if (view === null || signal.aborted) break;
            const parts = runParts(view);
            const data = JSON.stringify({
              summary: String(parts.summary),
              dag: String(parts.dag),
              steps: String(parts.steps),
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

  async function handle(request: Request, info: Deno.ServeHandlerInfo): Promise<Response> {
    const fullPath = new URL(request.url).pathname;
    if (!fullPath.startsWith(`${basePath}/`)) {
      // Outside this start's base path nothing answers, and nothing is set.
      return new Response("Not found: open the address the dashboard printed at start\n", {
        status: 404,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    }
    const decision = access.check(request);
    if (decision.kind === "denied") {
      return new Response(
        "Unauthorized: open the address the dashboard printed at start (it carries ?token=...)\n",
        { status: 401, headers: { "content-type": "text/plain; charset=utf-8" } },
      );
    }
    if (decision.kind === "welcome") {
      return new Response(null, {
        status: 303,
        headers: { location: decision.location, "set-cookie": decision.cookie },
      });
    }
    const remote = (info.remoteAddr as Deno.NetAddr).hostname;
    try {
      const response = await route(request, fullPath.slice(basePath.length), remote);
      if (!response.headers.get("content-type")?.startsWith("text/html")) return response;
      // The pages link relative to the base path (`runs`, `flows/x`): the document says where.
      return new Response(withBase(await response.text(), `${basePath}/`), response);
    } catch (error) {
      log(`dashboard: ${request.method} ${fullPath} failed: ${message(error)}`);
      return problem(500, "Error", `Cannot answer: ${message(error)}`);
    }
  }

  const server = Deno.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 4300,
    signal: shutdown.signal,
    onListen: () => {},
  }, handle);
  const address = server.addr as Deno.NetAddr;
  // Requests arrive only after this line: `handle` may use it.
  const access = new TokenCheck(token, basePath);
  const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname;
  const origin = `http://${host}:${address.port}`;
  const close = async () => {
    shutdown.abort();
    for (const stream of streams) stream.abort();
    await server.finished;
  };
  const root = `${origin}${basePath}`;
  return {
    url: `${root}/?token=${encodeURIComponent(token)}`,
    origin,
    root,
    token,
    close,
    [Symbol.asyncDispose]: close,
  };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
