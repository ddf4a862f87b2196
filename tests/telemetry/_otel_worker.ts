// Worker subprocess of the OpenTelemetry test: runs the flow until its stdin closes, then stops
// gracefully and exits (Deno's built-in exporter flushes at exit).
import { startWorker } from "../../src/worker/mod.ts";
import { otelFlow } from "./_otel_flow.ts";

const [url] = Deno.args;
const worker = await startWorker(otelFlow, {
  connectionString: url,
  logLevel: "error",
  pollIntervalMs: 50,
});
console.log("READY");
for await (const _ of Deno.stdin.readable) {
  // Nothing is sent: the stream ends when the test closes it.
}
await worker.stop();
