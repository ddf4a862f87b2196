// RunEvent: the event union of watchRun() and the browser client, typed by the run's flow.
// Checked by `deno check tests/types/`, never run.

import {
  type connect,
  Flow,
  type FlowOutput,
  type Json,
  type RunEvent,
  type SkipReason,
  type StepSlug,
  type StepState,
  type StepStatus,
  watchRun,
  type withStepQueues,
} from "../../mod.ts";
import type { SupabaseClient } from "@supabase/supabase-js";
import {
  startRun,
  type StepWaitingEvent as BrowserStepWaitingEvent,
  subscribeToRun,
} from "../../src/browser/mod.ts";
import type { Equals } from "./_equals.ts";

const flow = new Flow<{ emails: string[] }>({ slug: "signup" })
  .array({ slug: "addresses" }, (input) => input.emails)
  .map({ slug: "verify", array: "addresses" }, (email) => ({ email, ok: email.includes("@") }))
  .step(
    { slug: "welcome", dependsOn: ["verify"], if: { verify: [] } },
    (deps) => deps.verify.length,
  );

type Event = RunEvent<typeof flow>;

// The union is discriminated by type; each member has exactly its fields.
const _types: Equals<
  Event["type"],
  | "run:started"
  | "run:completed"
  | "run:failed"
  | "run:cancelled"
  | "run:retried"
  | "step:started"
  | "step:waiting"
  | "step:progress"
  | "step:completed"
  | "step:failed"
  | "step:skipped"
  | "step:cancelled"
  | "child:started"
  | "child:completed"
  | "child:failed"
  | "child:cancelled"
> = true;

// A cancelled run carries its reason, a retried one its retry count.
const _cancelled: Equals<
  Extract<Event, { type: "run:cancelled" }>["reason"],
  string | null
> = true;
const _retried: Equals<Extract<Event, { type: "run:retried" }>["retryCount"], number> = true;

// A completed step's output is that step's output type, narrowed by its slug.
function _completed(event: Extract<Event, { type: "step:completed" }>) {
  if (event.stepSlug === "verify") {
    const _verify: Equals<typeof event.output, { email: string; ok: boolean }[]> = true;
  } else if (event.stepSlug === "addresses") {
    const _addresses: Equals<typeof event.output, string[]> = true;
  } else {
    const _welcome: Equals<typeof event.stepSlug, "welcome"> = true;
    const _count: Equals<typeof event.output, number> = true;
  }
  // @ts-expect-error no step of the flow has that slug
  if (event.stepSlug === "nope") return;
}

// The run's output is the flow's output; step slugs everywhere are the flow's.
const _runOutput: Equals<
  Extract<Event, { type: "run:completed" }>["output"],
  FlowOutput<typeof flow>
> = true;
const _startedSlug: Equals<
  Extract<Event, { type: "step:started" }>["stepSlug"],
  StepSlug<typeof flow>
> = true;
const _failedRunSlug: Equals<
  Extract<Event, { type: "run:failed" }>["stepSlug"],
  StepSlug<typeof flow> | null
> = true;
const _skipReason: Equals<
  Extract<Event, { type: "step:skipped" }>["reason"],
  "condition_unmet" | "retries_exhausted" | "dependency_skipped" | "wait_timed_out"
> = true;

// A waiting step carries what sluice.step_event sends for it: its key (null for a sleep) and its
// due time or timeout (null for a signal wait without one), nothing else.
type Waiting = Extract<Event, { type: "step:waiting" }>;
const _waitingFields: Equals<
  keyof Waiting,
  "type" | "runId" | "stepSlug" | "key" | "until" | "at"
> = true;
const _waitingKey: Equals<Waiting["key"], string | null> = true;
const _waitingUntil: Equals<Waiting["until"], string | null> = true;
const _waitingSlug: Equals<Waiting["stepSlug"], StepSlug<typeof flow>> = true;

// A subflow child's events in its parent's stream carry what sluice.child_event sends: the
// parent's step (a slug of the flow), the child's index, run and flow; a failed child its error.
type ChildStarted = Extract<Event, { type: "child:started" }>;
const _childFields: Equals<
  keyof ChildStarted,
  "type" | "runId" | "at" | "stepSlug" | "index" | "childRunId" | "flowSlug"
> = true;
const _childSlug: Equals<ChildStarted["stepSlug"], StepSlug<typeof flow>> = true;
const _childIndex: Equals<ChildStarted["index"], number> = true;
const _childFailed: Equals<Extract<Event, { type: "child:failed" }>["errorMessage"], string> = true;
const _childEnds: Equals<
  keyof Extract<Event, { type: "child:completed" | "child:cancelled" }>,
  keyof ChildStarted
> = true;
// A child's run:started names its parent (absent for a root run).
const _parent: Equals<
  Extract<Event, { type: "run:started" }>["parent"],
  { readonly runId: string; readonly stepSlug: string; readonly index: number } | undefined
> = true;

// getRun() reads a waiting step with its key, due time and when it started waiting.
const _stepStatus: Equals<
  StepStatus,
  "created" | "started" | "waiting" | "completed" | "failed" | "skipped" | "cancelled"
> = true;
const _waitKey: Equals<StepState["waitKey"], string | null> = true;
const _waitUntil: Equals<StepState["waitUntil"], Date | null> = true;
const _waitingAt: Equals<StepState["waitingAt"], Date | null> = true;
const _stateSkip: Equals<StepState["skipReason"], SkipReason | null> = true;

// Without a flow type: any slug, JSON outputs.
type Untyped = RunEvent;
const _untypedSlug: Equals<Extract<Untyped, { type: "step:progress" }>["stepSlug"], string> = true;
const _untypedOutput: Equals<Extract<Untyped, { type: "step:completed" }>["output"], Json> = true;
const _untypedRunOutput: Equals<Extract<Untyped, { type: "run:completed" }>["output"], Json> = true;

// A step-queued flow types its events like the plain flow.
const _queued: Equals<RunEvent<ReturnType<typeof withStepQueues<typeof flow>>>, Event> = true;

// watchRun() yields events typed by a handle's flow, by `flow`, or untyped by a bare id.
async function _watch(sql: ReturnType<typeof connect>) {
  for await (const event of watchRun(sql, { runId: "id", flow })) {
    const _byHandle: Equals<typeof event, Event> = true;
  }
  for await (const event of watchRun(sql, "id", { flow })) {
    const _byOption: Equals<typeof event, Event> = true;
  }
  for await (const event of watchRun(sql, "id")) {
    const _byId: Equals<typeof event, Untyped> = true;
  }
}

// The browser entry point exports the waiting event as the main one does.
const _browserWaiting: Equals<BrowserStepWaitingEvent<StepSlug<typeof flow>>, Waiting> = true;

// The browser client yields the same union, and types a run's input by its flow.
async function _browser(supabase: SupabaseClient) {
  for await (const event of subscribeToRun(supabase, { runId: "id", flow })) {
    const _byHandle: Equals<typeof event, Event> = true;
  }
  for await (const event of subscribeToRun(supabase, "id")) {
    const _byId: Equals<typeof event, Untyped> = true;
  }
  await startRun(supabase, flow, { emails: ["a@b"] });
  // @ts-expect-error the input must match the flow's input type
  await startRun(supabase, flow, { emails: "a@b" });
  await startRun(supabase, "signup", { any: "json" });
}
