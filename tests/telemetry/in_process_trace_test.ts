// Stall recovery, waits and signals in traces (docs/observability.md), with an in-process SDK
// (sdk-trace-base) collecting the spans: an attempt whose worker went silent is taken back by
// recovery and the next attempt's span carries `sluice.stall.recovered`; a signal sent inside a
// request's span is a `sluice.signal send` span under it, and the wait it released shows on the
// attempt that started it.
import assert from "node:assert/strict";
import {
  type Context,
  context,
  type ContextManager,
  ROOT_CONTEXT,
  SpanKind,
  trace,
} from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { compileFlow } from "../../src/admin/mod.ts";
import { sendSignal, signalPayload } from "../../mod.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { freshDatabase } from "../_db.ts";
import { scaled } from "../_support.ts";
import { readAndClaim, registerWorker } from "../sql/_fixtures.ts";
import { testWorker, waitUntil } from "../worker/_helpers.ts";

/**
 * The smallest context manager: `with` makes a context active for the synchronous part of its
 * callback (sluice starts its spans before its first await). An application's SDK brings one that
 * follows async calls too.
 */
function stackContextManager(): ContextManager {
  const stack: Context[] = [ROOT_CONTEXT];
  return {
    active: () => stack.at(-1)!,
    with(active, fn, thisArg, ...args) {
      stack.push(active);
      try {
        return fn.call(thisArg, ...args);
      } finally {
        stack.pop();
      }
    },
    bind: (_context, target) => target,
    enable() {
      return this;
    },
    disable() {
      return this;
    },
  };
}

/** Registers an in-memory SDK for `body`'s spans, then removes it. */
async function withSpans(
  body: (spans: () => Promise<ReadableSpan[]>) => Promise<void>,
): Promise<void> {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  assert.ok(trace.setGlobalTracerProvider(provider));
  assert.ok(context.setGlobalContextManager(stackContextManager()));
  try {
    await body(async () => {
      await provider.forceFlush();
      return exporter.getFinishedSpans();
    });
  } finally {
    trace.disable();
    context.disable();
    await provider.shutdown();
  }
}

Deno.test("a signal sent inside a request's span is a sluice.signal send span under it, naming what it released", async () => {
  await using db = await freshDatabase();
  await withSpans(async (spans) => {
    const flow = new Flow<{ id: string }>({ slug: "signal_traced" })
      .step({ slug: "ask" }, (input) => ({ id: input.id }))
      .waitForSignal({
        slug: "decision",
        dependsOn: ["ask"],
        key: (deps) => `approval:${deps.ask.id}`,
        payload: signalPayload<{ approved: boolean }>(),
      })
      .step({ slug: "settle", dependsOn: ["decision"] }, (deps) => deps.decision.approved);
    await using _worker = await testWorker(flow, db);
    const runId = await startFlow(db.sql, flow, { id: "r1" });
    await waitUntil(async () => {
      const [row] = await db.sql`
        select status from sluice.step_states where run_id = ${runId} and step_slug = 'decision'`;
      return row?.status === "waiting";
    }, "the wait to start");

    const request = trace.getTracer("app").startSpan("POST /approve");
    await context.with(
      trace.setSpan(context.active(), request),
      () => sendSignal(db.sql, { key: "approval:r1", payload: { approved: true }, signalId: "s1" }),
    );
    request.end();
    assert.deepEqual(
      await waitForRun(db.sql, runId, { timeoutMs: scaled(30_000), flow }),
      { settle: true },
    );

    const finished = await spans();
    const sent = finished.find((s) => s.name === "sluice.signal send");
    assert.ok(sent, `spans: ${finished.map((s) => s.name).join(", ")}`);
    assert.equal(sent.kind, SpanKind.PRODUCER);
    assert.equal(sent.parentSpanContext?.spanId, request.spanContext().spanId);
    assert.equal(sent.spanContext().traceId, request.spanContext().traceId);
    assert.deepEqual(
      {
        key: sent.attributes["sluice.signal.key"],
        id: sent.attributes["sluice.signal.id"],
        outcome: sent.attributes["sluice.signal.outcome"],
        released: sent.attributes["sluice.signal.released"],
      },
      { key: "approval:r1", id: "s1", outcome: "sent", released: 1 },
    );
    const ask = finished.find((s) =>
      s.attributes["sluice.run.id"] === runId && s.attributes["sluice.step.slug"] === "ask"
    );
    assert.ok(
      ask?.events.some((e) => e.name === "sluice.wait.started"),
      "the attempt that started the wait says so",
    );
  });
});

Deno.test("the attempt after a stall recovery carries sluice.stall.recovered in the run's trace", async () => {
  await using db = await freshDatabase();
  await withSpans(async (finished) => {
    const flow = new Flow<{ n: number }>({ slug: "stall_traced", timeout: 1 })
      .step({ slug: "only" }, (input) => input.n + 1);
    await compileFlow(db.sql, flow);
    const runId = await startFlow(db.sql, flow, { n: 41 });
    // A worker that claims the first attempt and then goes silent, long past its stall window.
    const silent = await registerWorker(db.sql, "stall_traced", "stall_traced", "silent_worker");
    const [first] = await readAndClaim(db.sql, "stall_traced", silent, "stall_traced");
    assert.equal(first.attempt, 1);
    await db.sql`
      update sluice.step_tasks set started_at = now() - interval '1 minute'
      where run_id = ${runId}`;

    // The live worker's stall check takes the task back and runs it as attempt 2.
    await using _worker = await testWorker(flow, db);
    assert.deepEqual(
      await waitForRun(db.sql, runId, { timeoutMs: scaled(30_000), flow }),
      { only: 42 },
    );
    const spans = (await finished()).filter((s) => s.attributes["sluice.run.id"] === runId);
    assert.equal(spans.length, 1, "only the live worker's attempt has a span");
    const [span] = spans;
    assert.equal(span.attributes["sluice.task.attempt"], 2);
    const recovered = span.events.find((e) => e.name === "sluice.stall.recovered");
    assert.ok(recovered, `events: ${span.events.map((e) => e.name).join(", ")}`);
    assert.match(
      String(recovered.attributes?.["sluice.task.previous_error"]),
      /^stalled: no report of attempt 1 within /,
    );
  });
});
