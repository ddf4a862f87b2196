// The flow of the OpenTelemetry test, shared by its worker subprocess and its producer
// subprocess: three steps in a chain; "second" fails its first attempt and makes a span of its
// own, which must nest under its attempt's span.
import { trace } from "@opentelemetry/api";
import { Flow } from "../../src/dsl/flow.ts";

export const otelFlow = new Flow<{ n: number }>({
  slug: "otel_chain",
  maxAttempts: 3,
  baseDelay: 1,
})
  .step({ slug: "first" }, (input) => input.n + 1)
  .step({ slug: "second", dependsOn: ["first"] }, (deps, ctx) => {
    if (ctx.attempt === 1) throw new Error("flaky on the first attempt");
    return trace.getTracer("otel_test_handler").startActiveSpan("handler work", (span) => {
      span.end();
      return deps.first * 2;
    });
  })
  .step({ slug: "third", dependsOn: ["second"] }, (deps) => deps.second + 1);
