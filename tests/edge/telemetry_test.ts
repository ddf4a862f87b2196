// The Edge adapter's telemetry hook over real HTTP: an in-process SDK (sdk-trace-base with the
// OTLP/HTTP exporter, what a Supabase Edge Function registers) whose batch would wait a minute
// exports the attempt's span to a real OTLP receiver because the adapter calls `flush` under
// EdgeRuntime.waitUntil; the span joins the trace of the producer's traceparent.
import assert from "node:assert/strict";
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { freshDatabase } from "../_db.ts";
import { scaled } from "../_support.ts";
import { startOtlpReceiver } from "../telemetry/_otlp_receiver.ts";
import { call, LogCapture, serve, standInEdgeRuntime, testHandler, waitUntil } from "./_helpers.ts";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

Deno.test("the telemetry hook flushes the attempt spans of an Edge worker to an OTLP receiver", async () => {
  await using db = await freshDatabase();
  await using receiver = startOtlpReceiver();
  const provider = new BasicTracerProvider({
    spanProcessors: [
      new BatchSpanProcessor(
        new OTLPTraceExporter({ url: `${receiver.endpoint}/v1/traces` }),
        // Nothing leaves on its own during the test: only a flush exports.
        { scheduledDelayMillis: 600_000, maxExportBatchSize: 1_000, maxQueueSize: 1_000 },
      ),
    ],
  });
  assert.ok(trace.setGlobalTracerProvider(provider));
  let flushes = 0;
  try {
    await using edge = standInEdgeRuntime();
    const logs = new LogCapture();
    const flow = new Flow<{ name: string }>({ slug: "edge_traced" })
      .step({ slug: "greet" }, (input) => `hello ${input.name}`);
    await using handler = testHandler(flow, db, logs, {
      lifecycleEvents: new EventTarget(),
      respawn: false,
      telemetry: {
        flush: () => {
          flushes++;
          return provider.forceFlush();
        },
      },
    });
    await using server = serve(handler.fetch);
    assert.equal((await call(server.url)).body.status, "running");
    assert.equal(
      edge.pending.length,
      2,
      "the worker's life and the request's flush, under waitUntil",
    );

    // The start path of a producer whose traceparent reached the database (a supabase-js rpc
    // through PostgREST sets request.headers; SQL sets sluice.traceparent).
    const runId = await db.sql.begin(async (tx) => {
      await tx`select pg_catalog.set_config('sluice.traceparent', ${TRACEPARENT}, true)`;
      const [{ run_id }] = await tx`
        select sluice.start_flow('edge_traced', '{"name": "edge"}'::jsonb) as run_id`;
      return run_id as string;
    });
    await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow });
    // The attempt's span ended before its completion was reported; the batch holds it.
    assert.deepEqual(receiver.requests, []);

    await handler.end();
    assert.ok(flushes >= 1);
    const [span] = await waitUntil(
      () => {
        const found = receiver.spans.filter((s) => s.attributes["sluice.run.id"] === runId);
        return found.length === 1 ? found : null;
      },
      "the attempt's span reaches the receiver",
    );
    assert.equal(span.name, "sluice.task edge_traced.greet");
    assert.equal(span.traceId, TRACEPARENT.split("-")[1]);
    assert.equal(span.parentSpanId, TRACEPARENT.split("-")[2]);
    assert.equal(span.attributes["sluice.task.outcome"], "completed");
    assert.equal(span.kind, 5);
  } finally {
    await provider.shutdown();
    trace.disable();
  }
});

Deno.test("a telemetry option without a flush function is refused, naming it", () => {
  const flow = new Flow<{ name: string }>({ slug: "edge_bad" }).step({ slug: "s" }, () => 1);
  for (const telemetry of [null, {}, { flush: "yes" }]) {
    assert.throws(
      () =>
        testHandler(flow, { url: "postgres://localhost/none" } as never, new LogCapture(), {
          telemetry: telemetry as never,
        }),
      (error: Error) =>
        error instanceof TypeError &&
        /telemetry must be an object with a flush\(\) function/.test(error.message),
    );
  }
});
