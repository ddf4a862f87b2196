/**
 * `startDashboard()`: the dashboard's HTTP server. Pages are rendered on the server from the
 * monitoring views; the run page stays current through server-sent events.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { MIN_SECRET_LENGTH, newBasePath, newToken, TokenCheck } from "./auth.ts";
import { withBase } from "./page.ts";
import { problem } from "./response.ts";
import { answer, type DashboardState, message } from "./routes.ts";

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
 * Starts the dashboard on the database of the client it is given.
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

  const state: DashboardState = {
    sql,
    log,
    pollMs: options.pollMs,
    shutdown: shutdown.signal,
    streams,
  };

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
      const response = await answer(request, fullPath.slice(basePath.length), remote, state);
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
