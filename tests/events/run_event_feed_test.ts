// RunEventFeed: a live event that arrives right after a reconnect never goes ahead of the replay.
import assert from "node:assert/strict";
import type { RunEventPayload } from "../../src/events/run_event.ts";
import { RunEventFeed } from "../../src/events/run_event_feed.ts";

const runId = "00000000-0000-4000-8000-000000000001";
const started = { type: "run:started", runId } as unknown as RunEventPayload;
const completed = { type: "run:completed", runId, output: 1 } as unknown as RunEventPayload;
const step = (type: string, stepSlug: string) =>
  ({ type, runId, stepSlug, output: 1 }) as unknown as RunEventPayload;

Deno.test("RunEventFeed: after interrupt(), a live event waits for the resync's replay and never goes first", async () => {
  let state: RunEventPayload[] = [started];
  const feed = new RunEventFeed(runId, () => Promise.resolve(state));
  const events = feed.events();
  assert.deepEqual((await events.next()).value, started);

  // The connection is lost; while the state moves on, the new LISTEN already passes on "b"'s end.
  feed.interrupt();
  state = [started, step("step:started", "a"), step("step:completed", "a")];
  state = [...state, step("step:started", "b"), step("step:completed", "b"), completed];
  feed.push(step("step:completed", "b"));
  const next = events.next();
  // The transport listens again, then resyncs: the replay comes first, in order.
  feed.resync();
  const seen = [(await next).value];
  for await (const event of events) seen.push(event);
  assert.deepEqual(
    seen.map((e) => `${e!.type}:${e!.stepSlug ?? ""}`),
    ["step:started:a", "step:completed:a", "step:started:b", "step:completed:b", "run:completed:"],
  );
});

Deno.test("RunEventFeed: a retried run's run:retried passes once per retry, and run:cancelled ends the feed", async () => {
  const retried = (retryCount: number) =>
    ({ type: "run:retried", runId, retryCount }) as unknown as RunEventPayload;
  const cancelled = { type: "run:cancelled", runId, reason: "x" } as unknown as RunEventPayload;
  let state: RunEventPayload[] = [started, retried(1), step("step:started", "a")];
  const feed = new RunEventFeed(runId, () => Promise.resolve(state));
  const events = feed.events();
  const seen: string[] = [];
  for (let i = 0; i < 3; i++) seen.push(String((await events.next()).value!.type));
  // A repeat of the same retry (a replay) is dropped; the cancel is the run's last event.
  state = [started, retried(1), step("step:started", "a"), step("step:cancelled", "a"), cancelled];
  feed.push(retried(1));
  feed.resync();
  for await (const event of events) seen.push(`${event.type}:${event.stepSlug ?? ""}`);
  assert.deepEqual(seen, [
    "run:started",
    "run:retried",
    "step:started",
    "step:cancelled:a",
    "run:cancelled:",
  ]);
});

Deno.test("RunEventFeed: a wait step's step:waiting is its start: a repeat is dropped, its release passes", async () => {
  const state = [started, step("step:completed", "ask"), step("step:waiting", "decision")];
  const feed = new RunEventFeed(runId, () => Promise.resolve(state));
  const events = feed.events();
  const seen: string[] = [];
  for (let i = 0; i < 3; i++) {
    const { value } = await events.next();
    seen.push(`${value!.type}:${value!.stepSlug ?? ""}`);
  }
  feed.push(step("step:waiting", "decision"));
  feed.push(step("step:completed", "decision"));
  feed.push(completed);
  for await (const event of events) seen.push(`${event.type}:${event.stepSlug ?? ""}`);
  assert.deepEqual(seen, [
    "run:started:",
    "step:completed:ask",
    "step:waiting:decision",
    "step:completed:decision",
    "run:completed:",
  ]);
});

Deno.test("RunEventFeed: a step:progress passes only with more tasks done: a repeat of the same count and an older one are dropped", async () => {
  const progress = (done: number) =>
    ({
      type: "step:progress",
      runId,
      stepSlug: "each",
      done,
      total: 4,
    }) as unknown as RunEventPayload;
  const state = [started, step("step:started", "each")];
  const feed = new RunEventFeed(runId, () => Promise.resolve(state));
  const events = feed.events();
  const seen: string[] = [];
  for (let i = 0; i < 2; i++) seen.push(String((await events.next()).value!.type));
  // A replay after a reconnect repeats the last count; a slow transport delivers an older one.
  for (const done of [2, 2, 1, 3, 3]) feed.push(progress(done));
  feed.push(step("step:completed", "each"));
  feed.push(completed);
  for await (const event of events) {
    seen.push(`${event.type}:${event.type === "step:progress" ? event.done : ""}`);
  }
  assert.deepEqual(seen, [
    "run:started",
    "step:started",
    "step:progress:2",
    "step:progress:3",
    "step:completed:",
    "run:completed:",
  ]);
});

Deno.test("RunEventFeed: a subflow child's start and end pass once each, told apart by index; an omitted error is read back from that child's event", async () => {
  const child = (type: string, index: number, extra: Record<string, unknown> = {}) =>
    ({
      type,
      runId,
      stepSlug: "kids",
      index,
      childRunId: `c${index}`,
      ...extra,
    }) as unknown as RunEventPayload;
  let state: RunEventPayload[] = [
    started,
    step("step:waiting", "kids"),
    child("child:started", 0),
    child("child:started", 1),
  ];
  const feed = new RunEventFeed(runId, () => Promise.resolve(state));
  const events = feed.events();
  const seen: string[] = [];
  for (let i = 0; i < 4; i++) {
    const event = (await events.next()).value!;
    seen.push(`${event.type}:${event.index ?? ""}`);
  }
  // Child 1 fails; NOTIFY leaves its error out. A repeat of child 0's start is dropped.
  state = [
    ...state,
    child("child:completed", 0),
    child("child:failed", 1, { errorMessage: "boom 1" }),
    step("step:failed", "kids"),
    { type: "run:failed", runId } as unknown as RunEventPayload,
  ];
  feed.push(child("child:started", 0));
  feed.push(child("child:completed", 0));
  feed.push(child("child:failed", 1, { omitted: ["errorMessage"] }));
  feed.push(step("step:failed", "kids"));
  feed.push({ type: "run:failed", runId } as unknown as RunEventPayload);
  const failed = [];
  for await (const event of events) {
    seen.push(`${event.type}:${event.index ?? ""}`);
    if (event.type === "child:failed") failed.push(event);
  }
  assert.deepEqual(seen, [
    "run:started:",
    "step:waiting:",
    "child:started:0",
    "child:started:1",
    "child:completed:0",
    "child:failed:1",
    "step:failed:",
    "run:failed:",
  ]);
  assert.deepEqual(failed, [child("child:failed", 1, { errorMessage: "boom 1" })]);
});

Deno.test("RunEventFeed: a live run:cancelled whose run was retried before its reason could be read gives way to the state: the run's retry and its end follow", async () => {
  const retried = { type: "run:retried", runId, retryCount: 1 } as unknown as RunEventPayload;
  let state: RunEventPayload[] = [started, step("step:started", "a")];
  const feed = new RunEventFeed(runId, () => Promise.resolve(state));
  const events = feed.events();
  const seen: string[] = [];
  for (let i = 0; i < 2; i++) seen.push(String((await events.next()).value!.type));
  // Cancelled and at once retried: by the time the feed reads the reason, the state has none.
  state = [started, retried, step("step:started", "a")];
  feed.push(
    {
      type: "run:cancelled",
      runId,
      omitted: ["reason", "cancelledBy"],
    } as unknown as RunEventPayload,
  );
  const next = events.next();
  state = [...state, step("step:completed", "a"), completed];
  feed.push(step("step:completed", "a"));
  feed.push(completed);
  seen.push(String((await next).value!.type));
  for await (const event of events) seen.push(`${event.type}:${event.stepSlug ?? ""}`);
  assert.deepEqual(seen, [
    "run:started",
    "step:started",
    "run:retried",
    "step:completed:a",
    "run:completed:",
  ]);
});
