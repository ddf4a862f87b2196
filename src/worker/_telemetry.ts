/**
 * The worker's OpenTelemetry (docs/observability.md): one span per task attempt, a child of the
 * context the run was started in, and the task metrics. Written to the OpenTelemetry API only:
 * with no SDK registered every call is the API's no-op.
 *
 * @module
 */

import type { ClaimedTask, CompletedRun } from "../db/worker_queries.ts";
import {
  type Context,
  context,
  type Counter,
  type Histogram,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "../telemetry/otel_api.ts";
import { INSTRUMENTATION_SCOPE } from "../telemetry/scope.ts";
import { contextOf } from "../telemetry/trace_context.ts";
import type { TaskOutcome } from "./_task_executor.ts";

/** One attempt's span and the context its handler runs in. */
export interface AttemptTrace {
  readonly span: Span;
  /** The attempt's span as the active span: the handler's own spans nest under it. */
  readonly context: Context;
  readonly startedAt: number;
}

/** The spans and instruments of one worker. */
export class WorkerTelemetry {
  readonly #queue: string;
  readonly #started: Counter;
  readonly #completed: Counter;
  readonly #failed: Counter;
  readonly #duration: Histogram;
  readonly #queueWait: Histogram;
  readonly #runDuration: Histogram;

  /**
   * Takes the tracer and meter now, when the worker starts: a meter taken before the
   * application registered its SDK would stay the no-op one.
   */
  constructor(queue: string) {
    this.#queue = queue;
    const meter = metrics.getMeter(INSTRUMENTATION_SCOPE);
    this.#started = meter.createCounter("sluice.task.started", {
      description: "Task attempts claimed and started by a worker.",
      unit: "{attempt}",
    });
    this.#completed = meter.createCounter("sluice.task.completed", {
      description: "Task attempts whose handler returned an output.",
      unit: "{attempt}",
    });
    this.#failed = meter.createCounter("sluice.task.failed", {
      description: "Task attempts that failed (error, timeout, abort, invalid output).",
      unit: "{attempt}",
    });
    this.#duration = meter.createHistogram("sluice.task.duration", {
      description: "How long an attempt's handler ran, from its start to its outcome.",
      unit: "s",
    });
    this.#queueWait = meter.createHistogram("sluice.task.queue_wait", {
      description: "How long a task waited in its queue before this attempt claimed it.",
      unit: "s",
    });
    this.#runDuration = meter.createHistogram("sluice.run.duration", {
      description: "How long a run took from its start to its completion (the database's clock).",
      unit: "s",
    });
  }

  /** Records the duration of each run a reported batch of this worker completed. */
  runsCompleted(runs: readonly CompletedRun[]): void {
    for (const run of runs) {
      this.#runDuration.record(Math.max(0, run.seconds), { "sluice.flow.slug": run.flowSlug });
    }
  }

  /** Starts the span of `task`'s attempt, a child of the run's trace context. */
  start(task: ClaimedTask): AttemptTrace {
    const metricAttributes = {
      "sluice.flow.slug": task.flowSlug,
      "sluice.step.slug": task.stepSlug,
    };
    this.#started.add(1, metricAttributes);
    const wait = (Date.parse(task.claimedAt) - Date.parse(task.queuedAt)) / 1000;
    if (Number.isFinite(wait)) this.#queueWait.record(Math.max(0, wait), metricAttributes);
    const span = trace.getTracer(INSTRUMENTATION_SCOPE).startSpan(
      `sluice.task ${task.flowSlug}.${task.stepSlug}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          "messaging.system": "pgmq",
          "messaging.operation.type": "process",
          "messaging.destination.name": this.#queue,
          "messaging.message.id": task.messageId,
          "sluice.flow.slug": task.flowSlug,
          "sluice.run.id": task.runId,
          "sluice.step.slug": task.stepSlug,
          "sluice.task.index": task.taskIndex,
          "sluice.task.attempt": task.attempt,
          "sluice.task.max_attempts": task.maxAttempts,
          "sluice.worker.id": task.workerId,
        },
      },
      contextOf(task.traceparent),
    );
    // The attempt before this one ended in an error or was taken back by stall recovery.
    if (task.previousError !== null) {
      const stalled = task.previousError.startsWith("stalled:");
      span.addEvent(stalled ? "sluice.stall.recovered" : "sluice.retry.started", {
        "sluice.task.previous_error": task.previousError.split("\n", 1)[0],
      });
    }
    return { span, context: trace.setSpan(context.active(), span), startedAt: performance.now() };
  }

  /** Ends `attempt` with `outcome`: attributes, the error and status, retry and wait events. */
  end(attempt: AttemptTrace, task: ClaimedTask, outcome: TaskOutcome): void {
    const { span } = attempt;
    const metricAttributes = {
      "sluice.flow.slug": task.flowSlug,
      "sluice.step.slug": task.stepSlug,
    };
    this.#duration.record((performance.now() - attempt.startedAt) / 1000, metricAttributes);
    if (outcome.kind === "completed") {
      this.#completed.add(1, metricAttributes);
      span.setAttribute("sluice.task.outcome", "completed");
      for (const wait of outcome.waits) {
        span.addEvent("sluice.wait.started", { "sluice.wait.parameters": JSON.stringify(wait) });
      }
      span.setStatus({ code: SpanStatusCode.OK });
    } else {
      this.#failed.add(1, { ...metricAttributes, "sluice.task.failure_reason": outcome.reason });
      span.setAttribute("sluice.task.outcome", "failed");
      span.setAttribute("sluice.task.failure_reason", outcome.reason);
      const [firstLine] = outcome.error.split("\n", 1);
      const colon = firstLine.indexOf(": ");
      span.addEvent("exception", {
        "exception.type": colon > 0 ? firstLine.slice(0, colon) : "Error",
        "exception.message": colon > 0 ? firstLine.slice(colon + 2) : firstLine,
        "exception.stacktrace": outcome.error,
      });
      span.setStatus({ code: SpanStatusCode.ERROR, message: firstLine });
      // fail_task retries while attempts remain in the round (a cancelled run excepted).
      if (task.attempt < task.maxAttempts && outcome.reason !== "cancelled") {
        span.addEvent("sluice.retry.scheduled", {
          "sluice.task.next_attempt": task.attempt + 1,
          ...(outcome.retryDelaySeconds === null
            ? {}
            : { "sluice.retry.delay_seconds": outcome.retryDelaySeconds }),
        });
      }
    }
    span.end();
  }
}
