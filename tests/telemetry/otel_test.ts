// OpenTelemetry end to end (docs/observability.md): worker and producer PROCESSES with Deno's
// built-in SDK (OTEL_DENO=true) export over OTLP/HTTP JSON to a real receiver in the test. One
// run started inside a producer span arrives as one trace; a failed attempt and its retry show;
// the metrics count what ran; with OpenTelemetry off nothing is exported.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import { type ReceivedSpan, startOtlpReceiver } from "./_otlp_receiver.ts";

const HERE = new URL("./", import.meta.url);

function otelEnv(endpoint: string, on: boolean, service: string): Record<string, string> {
  return {
    ...(on ? { OTEL_DENO: "true" } : {}),
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_METRIC_EXPORT_INTERVAL: "200",
    OTEL_SERVICE_NAME: service,
  };
}

/** Runs the producer subprocess to its end; what it printed. */
async function produce(url: string, env: Record<string, string>) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("_otel_producer.ts", HERE).pathname, url],
    env,
    stdin: "null",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.ok(output.success, `the producer failed: ${stderr}`);
  return JSON.parse(new TextDecoder().decode(output.stdout).trim().split("\n").at(-1)!) as {
    runId: string;
    traceId: string;
    spanId: string;
  };
}

/** Runs the worker subprocess until `body` resolves, then stops it and waits for its exit. */
async function withWorker(url: string, env: Record<string, string>, body: () => Promise<void>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("_otel_worker.ts", HERE).pathname, url],
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let printed = "";
    while (!printed.includes("READY\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`the worker exited early: ${await stderr}`);
      printed += value;
    }
    await body();
    await child.stdin.close();
    const status = await child.status;
    assert.ok(status.success, `the worker exited with ${status.code}: ${await stderr}`);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    await child.status;
    await lines.cancel().catch(() => {});
    await stderr.catch(() => {});
  }
}

/** The span tree under `root`, one line per span, children in the order their steps ran. */
export function renderTree(spans: readonly ReceivedSpan[], root: ReceivedSpan): string {
  const lines: string[] = [];
  const visit = (span: ReceivedSpan, depth: number) => {
    const a = span.attributes;
    const details = a["sluice.step.slug"] === undefined
      ? ""
      : ` [step=${a["sluice.step.slug"]} attempt=${a["sluice.task.attempt"]} outcome=${
        a["sluice.task.outcome"]
      }${span.status.code === 2 ? " status=ERROR" : ""}${
        span.events.length ? ` events=${span.events.map((e) => e.name).join(",")}` : ""
      }]`;
    lines.push(`${"  ".repeat(depth)}${span.name} (${span.service})${details}`);
    const children = spans.filter((s) => s.parentSpanId === span.spanId);
    const order = (s: ReceivedSpan) =>
      `${["first", "second", "third"].indexOf(String(s.attributes["sluice.step.slug"]))} ${
        s.attributes["sluice.task.attempt"]
      }`;
    children.sort((x, y) => order(x).localeCompare(order(y)));
    for (const child of children) visit(child, depth + 1);
  };
  visit(root, 0);
  return lines.join("\n");
}

Deno.test("one run is one trace under the producer's span, with its attempts, failure, retry and metrics", async () => {
  await using db = await freshDatabase();
  await using receiver = startOtlpReceiver();
  let produced!: { runId: string; traceId: string; spanId: string };
  await withWorker(db.url, otelEnv(receiver.endpoint, true, "sluice-worker"), async () => {
    produced = await produce(db.url, otelEnv(receiver.endpoint, true, "producer"));
    await waitUntil(async () => {
      const [run] = await db.sql`select status from sluice.runs where run_id = ${produced.runId}`;
      return run?.status === "completed";
    }, "the run completes");
  });
  const [run] = await db.sql`select traceparent from sluice.runs where run_id = ${produced.runId}`;
  assert.equal(run.traceparent, `00-${produced.traceId}-${produced.spanId}-01`);

  const attempts = await waitUntil(
    () => {
      const found = receiver.spans.filter((s) => s.attributes["sluice.run.id"] === produced.runId);
      const complete = found.length === 4 &&
        receiver.spans.some((s) => s.name === "handler work") &&
        receiver.spans.some((s) => s.spanId === produced.spanId);
      return complete ? found : null;
    },
    "the 4 attempt spans, the handler's span and the producer's span arrive",
    undefined,
    () => receiver.spans,
  );
  const producer = receiver.spans.find((s) => s.spanId === produced.spanId)!;
  assert.equal(producer.name, "producer request");
  for (const span of attempts) {
    assert.equal(span.traceId, produced.traceId, `${span.name} is in the producer's trace`);
    assert.equal(
      span.parentSpanId,
      produced.spanId,
      `${span.name} is a child of the producer span`,
    );
    assert.equal(span.kind, 5, "SPAN_KIND_CONSUMER");
    assert.equal(span.service, "sluice-worker");
    assert.equal(span.attributes["sluice.flow.slug"], "otel_chain");
    assert.equal(span.attributes["sluice.task.index"], 0);
    assert.equal(span.attributes["messaging.destination.name"], "otel_chain");
    assert.match(String(span.attributes["sluice.worker.id"]), /^[0-9a-f-]{36}$/);
  }
  const byStep = (step: string) =>
    attempts.filter((s) => s.attributes["sluice.step.slug"] === step)
      .sort((x, y) =>
        Number(x.attributes["sluice.task.attempt"]) - Number(y.attributes["sluice.task.attempt"])
      );
  assert.deepEqual(
    ["first", "second", "third"].map((step) =>
      byStep(step).map((s) => s.attributes["sluice.task.outcome"])
    ),
    [["completed"], ["failed", "completed"], ["completed"]],
  );
  const [failed, retried] = byStep("second");
  assert.equal(failed.status.code, 2, "STATUS_CODE_ERROR");
  assert.equal(failed.attributes["sluice.task.failure_reason"], "error");
  const exception = failed.events.find((e) => e.name === "exception");
  assert.equal(exception?.attributes["exception.message"], "flaky on the first attempt");
  assert.equal(exception?.attributes["exception.type"], "Error");
  assert.deepEqual(
    failed.events.find((e) => e.name === "sluice.retry.scheduled")?.attributes,
    { "sluice.task.next_attempt": 2 },
  );
  assert.equal(retried.status.code, 1, "STATUS_CODE_OK");
  assert.match(
    String(
      retried.events.find((e) => e.name === "sluice.retry.started")?.attributes[
        "sluice.task.previous_error"
      ],
    ),
    /flaky on the first attempt/,
    "the retry names the error that ended the attempt before it",
  );
  const handlerSpan = receiver.spans.find((s) => s.name === "handler work")!;
  assert.equal(
    handlerSpan.parentSpanId,
    retried.spanId,
    "the handler's span nests under its attempt",
  );
  assert.equal(handlerSpan.traceId, produced.traceId);

  const tree = renderTree(receiver.spans, producer);
  console.log(tree);
  assert.equal(tree.split("\n").length, 6);

  // Cumulative sums: the last export (at the worker's exit) holds every attempt.
  const value = (metric: string, step: string, extra: Record<string, unknown> = {}) =>
    receiver.points().find((p) =>
      p.metric === metric && p.attributes["sluice.step.slug"] === step &&
      p.attributes["sluice.flow.slug"] === "otel_chain" &&
      Object.entries(extra).every(([k, v]) => p.attributes[k] === v)
    )?.value ?? 0;
  const counts = () =>
    ["first", "second", "third"].map((step) => [
      value("sluice.task.started", step),
      value("sluice.task.completed", step),
      value("sluice.task.failed", step, { "sluice.task.failure_reason": "error" }),
      value("sluice.task.duration", step),
      value("sluice.task.queue_wait", step),
    ]);
  const expected = [[1, 1, 0, 1, 1], [2, 1, 1, 2, 2], [1, 1, 0, 1, 1]];
  const runs = () =>
    receiver.points().find((p) =>
      p.metric === "sluice.run.duration" && p.attributes["sluice.flow.slug"] === "otel_chain"
    )?.value ?? 0;
  await waitUntil(
    () => JSON.stringify(counts()) === JSON.stringify(expected) && runs() === 1,
    "the metrics count the attempts and the one run",
    undefined,
    () => ({ counts: counts(), runs: runs(), points: receiver.points() }),
  );
});

Deno.test("with OpenTelemetry off nothing is exported and the run records no trace context", async () => {
  await using db = await freshDatabase();
  await using receiver = startOtlpReceiver();
  let runId!: string;
  await withWorker(db.url, otelEnv(receiver.endpoint, false, "sluice-worker"), async () => {
    ({ runId } = await produce(db.url, otelEnv(receiver.endpoint, false, "producer")));
    await waitUntil(async () => {
      const [run] = await db.sql`select status from sluice.runs where run_id = ${runId}`;
      return run?.status === "completed";
    }, "the run completes");
  });
  // Both processes have exited: whatever they would export was sent before they did.
  assert.deepEqual(receiver.requests, []);
  const [run] = await db.sql`select traceparent from sluice.runs where run_id = ${runId}`;
  assert.equal(run.traceparent, null);
});
