// Shared helpers of the worker and client tests: fast worker settings, log capture, polling.
import type { DeployableFlow } from "../../src/dsl/types.ts";
import {
  type AliasActivationOptions,
  type BaseWorkerOptions,
  startWorker,
  type WorkerHandle,
  type WorkerOptions,
} from "../../src/worker/mod.ts";
import type { TestDatabase } from "../_db.ts";

import { LogCapture } from "../_support.ts";

export { latch, LogCapture, uniqueSlug, waitUntil } from "../_support.ts";

/** A running test worker that stops when disposed. */
export interface TestWorker extends WorkerHandle, AsyncDisposable {
  readonly logs: LogCapture;
}

/**
 * Starts a worker with test-friendly intervals (overridable) and a log capture; for a step-queued
 * flow give `stepSlug`, for a deployed flow optionally `activate` (tests of the typed API call
 * `startWorker` itself).
 */
export async function testWorker(
  flow: DeployableFlow,
  db: TestDatabase,
  options:
    & Partial<BaseWorkerOptions>
    & AliasActivationOptions
    & { stepSlug?: string; functionName?: string } = {},
): Promise<TestWorker> {
  const logs = new LogCapture();
  const handle = await startWorker(
    flow,
    {
      connectionString: db.url,
      heartbeatIntervalMs: 100,
      stalledCheckIntervalMs: 100,
      shutdownGraceMs: 2000,
      logLevel: "debug",
      logger: logs.sink,
      env: {},
      ...options,
    } as WorkerOptions,
  );
  return {
    workerId: handle.workerId,
    functionName: handle.functionName,
    queueName: handle.queueName,
    flowSlug: handle.flowSlug,
    stepSlug: handle.stepSlug,
    aliasActivation: handle.aliasActivation,
    get status() {
      return handle.status;
    },
    stop: (stopOptions) => handle.stop(stopOptions),
    pollingStopped: handle.pollingStopped,
    done: handle.done,
    logs,
    [Symbol.asyncDispose]: () => handle.stop(),
  };
}

/**
 * A TCP port on loopback that counts the connections made to it and answers none: a
 * `connectionString` pointing here shows whether code reached for the database at all.
 */
export function silentDatabase(): Disposable & { readonly url: string; accepted(): number } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let accepted = 0;
  (async () => {
    for await (const connection of listener) {
      accepted++;
      connection.close();
    }
  })().catch(() => {});
  return {
    url: `postgres://nobody@127.0.0.1:${(listener.addr as Deno.NetAddr).port}/nothing`,
    accepted: () => accepted,
    [Symbol.dispose]: () => listener.close(),
  };
}
