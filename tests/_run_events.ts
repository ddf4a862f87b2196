// Fixtures of the live run event tests (SQL, watchRun, the browser client): a flow with a map, a
// skipped step and a retried failure, the exact events of its run, a driver that settles its
// tasks one per transaction, the stand-in realtime.send, and a LISTEN as a role without privileges.
import assert from "node:assert/strict";
import postgres from "postgres";
import { runChannel } from "../src/events/run_event.ts";
import {
  type ClaimedTask,
  completeTask,
  failTask,
  type FlowSpec,
  readAndClaim,
  registerWorker,
  type Sql,
} from "./sql/_fixtures.ts";

/** An event as JSON. */
export type Event = { readonly type: string } & Record<string, unknown>;

/**
 * The mixed flow under `slug` (on queue `slug`): `list` -> map `double` -> `flaky` (fails its
 * first attempt, then succeeds), and `premium`, skipped for an input without `tier: "gold"`.
 * Progress events on every map completion.
 */
export function mixedFlow(slug: string, options: Partial<FlowSpec> = {}): FlowSpec {
  return {
    slug,
    progressInterval: 0,
    steps: [
      { slug: "list" },
      { slug: "premium", if: { tier: "gold" } },
      { slug: "double", type: "map", deps: ["list"], mapSource: "list" },
      { slug: "flaky", deps: ["double"], maxAttempts: 2 },
    ],
    ...options,
  };
}

/** The events, without `at`, of a run of the mixed flow with input `{ tier: "silver" }`. */
export function mixedEvents(runId: string, slug: string): Event[] {
  return [
    { type: "run:started", runId, flowSlug: slug },
    { type: "step:started", runId, stepSlug: "list", tasks: 1 },
    {
      type: "step:skipped",
      runId,
      stepSlug: "premium",
      reason: "condition_unmet",
      errorMessage: null,
    },
    { type: "step:completed", runId, stepSlug: "list", output: [1, 2, 3] },
    { type: "step:started", runId, stepSlug: "double", tasks: 3 },
    { type: "step:progress", runId, stepSlug: "double", done: 1, total: 3 },
    { type: "step:progress", runId, stepSlug: "double", done: 2, total: 3 },
    { type: "step:completed", runId, stepSlug: "double", output: [2, 4, 6] },
    { type: "step:started", runId, stepSlug: "flaky", tasks: 1 },
    { type: "step:completed", runId, stepSlug: "flaky", output: "ok" },
    { type: "run:completed", runId, flowSlug: slug, output: { flaky: "ok" } },
  ];
}

/** Events without their progress: what a replay after an outage can promise. */
export function withoutProgress(events: readonly Event[]): Event[] {
  return events.filter((event) => event.type !== "step:progress");
}

/** Events without their timestamps (each must have one). */
export function withoutAt(events: readonly Event[]): Event[] {
  return events.map(({ at, ...rest }) => {
    assert.equal(typeof at, "string", `event ${JSON.stringify(rest)} has no timestamp`);
    return rest;
  });
}

/** Claims the mixed flow's tasks and settles them one per transaction, in step and index order. */
export class MixedRunDriver {
  readonly #sql: Sql;
  readonly #slug: string;
  readonly #workerId: Promise<string>;
  #flakyAttempts = 0;
  /** Claimed tasks not settled yet. */
  #held: ClaimedTask[] = [];

  constructor(sql: Sql, slug: string) {
    this.#sql = sql;
    this.#slug = slug;
    this.#workerId = registerWorker(sql, slug, slug, `${slug}_${crypto.randomUUID()}`);
  }

  /** Claims what is visible, then settles at most `limit` claimed tasks; returns how many. */
  async step(limit = Infinity): Promise<number> {
    this.#held.push(...await readAndClaim(this.#sql, this.#slug, await this.#workerId, this.#slug));
    this.#held.sort((a, b) =>
      a.step_slug.localeCompare(b.step_slug) || a.task_index - b.task_index
    );
    let settled = 0;
    while (settled < limit && this.#held.length > 0) {
      const task = this.#held.shift()!;
      settled++;
      if (task.step_slug === "list") await completeTask(this.#sql, task, [1, 2, 3]);
      else if (task.step_slug === "double") {
        await completeTask(this.#sql, task, (task.input as number) * 2);
      } else if (++this.#flakyAttempts === 1) await failTask(this.#sql, task, "flaky once", 0);
      else await completeTask(this.#sql, task, "ok");
    }
    return settled;
  }

  /** Settles everything until the run is done; flaky must have run exactly twice. */
  async finish(): Promise<void> {
    for (let round = 0; round < 20; round++) if (await this.step() === 0) break;
    assert.equal(this.#flakyAttempts, 2, "flaky ran twice: one retried failure, one success");
  }
}

/** A stand-in for Supabase's `realtime.send` (its signature) that records every call. */
export async function installRealtimeSend(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create schema realtime;
    create table realtime.sent (
      id bigserial primary key, payload jsonb, event text, topic text, private boolean
    );
    create function realtime.send(payload jsonb, event text, topic text, private boolean default true)
    returns void language sql
    as $$ insert into realtime.sent (payload, event, topic, private) values ($1, $2, $3, $4) $$;
  `);
}

/** The recorded realtime.send calls of one topic, in call order. */
export async function realtimeCalls(sql: Sql, topic: string) {
  return await sql<{ payload: Event; event: string; topic: string; private: boolean }[]>`
    select payload, event, topic, private from realtime.sent where topic = ${topic} order by id`;
}

/** Collects the events of an iteration in the background, without `at` (each must have one). */
export function collect(iteration: AsyncIterable<{ readonly type: string; readonly at: string }>) {
  const events: Event[] = [];
  const done = (async () => {
    for await (const event of iteration) events.push(...withoutAt([event]));
  })();
  return { events, done };
}

/**
 * Creates a nologin role unless it exists (roles belong to the whole test cluster). Parallel test
 * files race on it: a check-then-create lets two files both see no role, so the loser's
 * `duplicate_object` (or the `unique_violation` of pg_authid under that race) is caught instead.
 */
export async function ensureRole(sql: Sql, role: string): Promise<void> {
  await sql.unsafe(`
    do $$ begin
      create role ${role} nologin;
    exception when duplicate_object or unique_violation then null;
    end $$`);
}

/**
 * LISTENs on `runId`'s channel as `role` (created without privileges), as any role that can
 * connect may: one session (postgres.js's onnotify, as the listener uses it), `set role`, then
 * LISTEN. The payloads arrive in `payloads`; dispose to end the session.
 */
export async function listenAs(
  sql: Sql,
  url: string,
  role: string,
  runId: string,
): Promise<{ payloads: string[] } & AsyncDisposable> {
  await ensureRole(sql, role);
  const payloads: string[] = [];
  const session = postgres(
    url,
    {
      max: 1,
      onnotice: () => {},
      onnotify: (_channel: string, payload: string) => payloads.push(payload),
    } as unknown as postgres.Options<Record<string, never>>,
  );
  await session.unsafe(`set role ${role}; listen ${runChannel(runId)}`);
  return { payloads, [Symbol.asyncDispose]: () => session.end() };
}
