// Producer subprocess of the OpenTelemetry test: starts one run inside a span of its own and
// prints the run id and the span's trace and span ids.
import postgres from "postgres";
import { trace } from "@opentelemetry/api";
import { startFlow } from "../../src/client/start_flow.ts";
import { otelFlow } from "./_otel_flow.ts";

const [url] = Deno.args;
const sql = postgres(url, { max: 1, onnotice: () => {} });
await trace.getTracer("otel_test_producer").startActiveSpan("producer request", async (span) => {
  const runId = await startFlow(sql, otelFlow, { n: 1 });
  console.log(JSON.stringify({
    runId,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
  }));
  span.end();
});
await sql.end();
