// Shared helpers of the worker and client tests: fast worker settings, log capture, polling.
import type { DeployableFlow } from "../../src/dsl/types.ts";
import {
  type BaseWorkerOptions,
  type LogRecord,
  startWorker,
  type StepWorkerOptions,
  type WorkerHandle,
  type WorkerOptions,
} from "../../src/worker/mod.ts";
import type { TestDatabase } from "../_db.ts";

/** Captures a worker's log records. */
export class LogCapture {
  readonly records: LogRecord[] = [];
  readonly sink = (record: LogRecord): void => {
    this.records.push(record);
  };

  /** Records with this level (and message substring). */
  find(level: LogRecord["level"], message = ""): LogRecord[] {
    return this.records.filter((r) => r.level === level && r.message.includes(message));
  }

  /** All records as one JSON text, to search for things that must never be logged. */
  text(): string {
    return this.records.map((r) => JSON.stringify(r)).join("\n");
  }
}

/** A running test worker that stops when disposed. */
export interface TestWorker extends WorkerHandle, AsyncDisposable {
  readonly logs: LogCapture;
}

/**
 * Starts a worker with test-friendly intervals (overridable) and a log capture; for a step-queued
 * flow give `stepSlug` (tests of the typed API call `startWorker` itself).
 */
export async function testWorker(
  flow: DeployableFlow,
  db: TestDatabase,
  options: Partial<BaseWorkerOptions> & { stepSlug?: string } = {},
): Promise<TestWorker> {
  const logs = new LogCapture();
  const start = startWorker as (
    flow: DeployableFlow,
    options: WorkerOptions | StepWorkerOptions,
  ) => Promise<WorkerHandle>;
  const handle = await start(
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
    } as WorkerOptions | StepWorkerOptions,
  );
  return {
    workerId: handle.workerId,
    functionName: handle.functionName,
    queueName: handle.queueName,
    flowSlug: handle.flowSlug,
    stepSlug: handle.stepSlug,
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

/** Polls `check` until it returns a truthy value; throws after `timeoutMs`. */
export async function waitUntil<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 15_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A promise with its resolve function, for handlers that wait for the test. */
export function latch<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

/** A unique flow slug per test, so parallel tests never share queues. */
export function uniqueSlug(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}`;
}
