// Shared helpers of the Edge adapter tests: a stand-in EdgeRuntime, loopback servers, log capture.
import type { DeployableFlow } from "../../src/dsl/types.ts";
import {
  createWorkerHandler,
  type WorkerFunctionHandler,
  type WorkerFunctionOptions,
  type WorkerFunctionStatus,
} from "../../src/edge/mod.ts";
import type { TestDatabase } from "../_db.ts";

import type { LogCapture } from "../_support.ts";

export { latch, LogCapture, uniqueSlug, waitUntil } from "../_support.ts";

export const SECRET = "test-worker-secret";

/**
 * Installs a stand-in `globalThis.EdgeRuntime` recording `waitUntil` promises; disposing it
 * waits for them and restores what was there.
 */
export function standInEdgeRuntime(): { pending: Promise<unknown>[] } & AsyncDisposable {
  const global = globalThis as { EdgeRuntime?: unknown };
  const had = Object.hasOwn(global, "EdgeRuntime");
  const previous = global.EdgeRuntime;
  const pending: Promise<unknown>[] = [];
  global.EdgeRuntime = { waitUntil: (promise: Promise<unknown>) => void pending.push(promise) };
  return {
    pending,
    async [Symbol.asyncDispose]() {
      await Promise.allSettled(pending);
      if (had) global.EdgeRuntime = previous;
      else delete global.EdgeRuntime;
    },
  };
}

/** A loopback HTTP server; disposing it shuts it down. */
export interface TestServer extends AsyncDisposable {
  readonly url: URL;
  /** Requests received, in order. */
  readonly requests: { method: string; authorization: string | null; body: string }[];
}

/** Serves `handle` on 127.0.0.1 (any free port), recording every request. */
export function serve(handle: (request: Request) => Promise<Response> | Response): TestServer {
  const requests: TestServer["requests"] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const body = await request.clone().text();
      requests.push({
        method: request.method,
        authorization: request.headers.get("authorization"),
        body,
      });
      return await handle(request);
    },
  );
  return {
    url: new URL(`http://127.0.0.1:${server.addr.port}/functions/v1/worker`),
    requests,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** A stand-in function URL that only counts successor requests. */
export function countingServer(): TestServer {
  return serve(() => Response.json({ status: "running" }));
}

/** One request to `url` with the bearer secret (or the given Authorization header). */
export async function call(
  url: URL,
  authorization: string | null = `Bearer ${SECRET}`,
  method = "POST",
): Promise<{ status: number; body: WorkerFunctionStatus & { error?: string } }> {
  const headers: Record<string, string> = {};
  if (authorization !== null) headers.authorization = authorization;
  const response = await fetch(url, { method, headers });
  return { status: response.status, body: await response.json() };
}

/**
 * A handler with test-friendly intervals, the test secret and a fresh database; for a step-queued
 * flow give `stepSlug` (tests of the typed API call `createWorkerHandler` itself).
 */
export function testHandler(
  flow: DeployableFlow,
  db: TestDatabase,
  logs: LogCapture,
  options: Partial<WorkerFunctionOptions> = {},
): WorkerFunctionHandler {
  return createWorkerHandler(
    flow,
    {
      connectionString: db.url,
      secret: SECRET,
      env: {},
      heartbeatIntervalMs: 100,
      stalledCheckIntervalMs: 100,
      pollIntervalMs: 100,
      drainTimeoutMs: 5_000,
      logLevel: "debug",
      logger: logs.sink,
      ...options,
    } as WorkerFunctionOptions,
  );
}

/** Rows of `sluice.workers` of a function: how many started, how many are not stopped. */
export async function workerCounts(
  db: TestDatabase,
  functionName: string,
): Promise<{ started: number; live: number }> {
  const [row] = await db.sql<{ started: number; live: number }[]>`
    select count(*)::int as started, (count(*) filter (where stopped_at is null))::int as live
    from sluice.workers where function_name = ${functionName}`;
  return { started: row.started, live: row.live };
}
