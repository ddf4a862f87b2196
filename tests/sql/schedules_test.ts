// Schedules on the real database, on a clock the test controls: every firing is
// fireDueSchedules(sql, { now }) (what a worker's heartbeat calls with the database's clock), every
// schedule starts from `now: T0`. One run per tick, also with firers racing from separate
// connections; the missed-tick policies after an outage; an alias schedule following a version
// switch while a concrete one stays; pause and resume; bad cron expressions and time zones refused
// before anything is written.
import assert from "node:assert/strict";
import { defineDeployedFlow, Flow, FlowNotFoundError } from "../../mod.ts";
import {
  activateAlias,
  compileFlow,
  deleteSchedule,
  fireDueSchedules,
  getAlias,
  getSchedule,
  getScheduleTicks,
  InvalidCronError,
  InvalidTimezoneError,
  listSchedules,
  pauseSchedule,
  resumeSchedule,
  schedule,
  ScheduleExistsError,
  ScheduleNotFoundError,
} from "../../src/admin/mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";

/** The schedules start counting here: 30 s past a minute. */
const T0 = new Date("2030-01-01T00:00:30Z");
const MINUTE = 60_000;

function at(ms: number): Date {
  return new Date(T0.getTime() + ms);
}

/** The minute ticks after T0: tick(1) is 00:01:00. */
function tick(n: number): Date {
  return new Date(Date.UTC(2030, 0, 1, 0, n, 0));
}

function reportFlow(slug = "report") {
  return new Flow<{ kind: string }>({ slug }).step({ slug: "build" }, (input) => input.kind);
}

/** The runs of a flow, oldest first, with how they were started. */
async function runsOf(db: TestDatabase, flowSlug: string) {
  return await db.sql<{ run_id: string; started_via: string; input: unknown }[]>`
    select run_id, started_via, input from sluice.runs where flow_slug = ${flowSlug}
    order by started_at, run_id`;
}

async function runCount(db: TestDatabase): Promise<number> {
  const [{ count }] = await db.sql<{ count: number }[]>`
    select count(*)::integer as count from sluice.runs`;
  return count;
}

Deno.test("a per-minute schedule starts one run per tick, for five ticks, with the tick's input", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  const created = await schedule(db.sql, flow, {
    cron: "* * * * *",
    input: { kind: "minutely" },
    now: T0,
  });
  assert.equal(created.name, "report");
  assert.equal(created.targetKind, "flow");
  assert.deepEqual(created.nextDueAt, tick(1));

  // Nothing is due before the first tick.
  assert.deepEqual(await fireDueSchedules(db.sql, { now: at(20_000) }), { fired: 0, advanced: 0 });
  for (let n = 1; n <= 5; n++) {
    // Each tick, fired a little late, then swept again at once: the second sweep finds nothing.
    const now = new Date(tick(n).getTime() + 1500);
    assert.deepEqual(await fireDueSchedules(db.sql, { now }), { fired: 1, advanced: 1 });
    assert.deepEqual(await fireDueSchedules(db.sql, { now }), { fired: 0, advanced: 0 });
    assert.deepEqual((await getSchedule(db.sql, "report"))?.nextDueAt, tick(n + 1));
  }
  const ticks = await getScheduleTicks(db.sql, "report");
  assert.deepEqual(ticks.map((t) => t.dueAt), [1, 2, 3, 4, 5].map(tick));
  assert.ok(ticks.every((t) => !t.catchUp && t.error === null));
  const runs = await runsOf(db, "report");
  assert.deepEqual(runs.map((r) => r.run_id), ticks.map((t) => t.runId));
  assert.ok(runs.every((r) => r.started_via === "report"));
  assert.deepEqual(runs.map((r) => r.input), Array(5).fill({ kind: "minutely" }));
});

Deno.test("firers racing on separate connections start exactly one run per tick", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  await schedule(db.sql, flow, { cron: "* * * * *", input: { kind: "raced" }, now: T0 });
  const firers = Array.from({ length: 6 }, () => db.connect(1));

  for (let n = 1; n <= 5; n++) {
    const now = new Date(tick(n).getTime() + 100);
    const results = await Promise.all(firers.map((sql) => fireDueSchedules(sql, { now })));
    assert.equal(results.reduce((sum, r) => sum + r.fired, 0), 1, `tick ${n} fired once`);
  }

  // A firer holding the schedule in an open transaction: another one neither waits nor fires.
  const now = new Date(tick(6).getTime() + 100);
  const [holder, other] = firers;
  await holder.begin(async (tx) => {
    const locked =
      await tx`select * from sluice.fire_due_schedules(${now.toISOString()}::timestamptz)`;
    assert.equal(locked.length, 1);
    assert.deepEqual(await fireDueSchedules(other, { now }), { fired: 0, advanced: 0 });
    // Committed without a next due time (as pg_cron's firing does); the next sweep computes it.
  });
  assert.equal((await getSchedule(db.sql, "report"))?.nextDueAt, null);
  assert.deepEqual(await fireDueSchedules(other, { now }), { fired: 0, advanced: 1 });
  assert.deepEqual((await getSchedule(db.sql, "report"))?.nextDueAt, tick(7));

  const ticks = await getScheduleTicks(db.sql, "report");
  assert.deepEqual(ticks.map((t) => t.dueAt), [1, 2, 3, 4, 5, 6].map(tick));
  assert.equal(await runCount(db), 6);
});

Deno.test("the tick key decides: a due time set back to a fired tick starts no second run", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  await schedule(db.sql, flow, { cron: "* * * * *", input: { kind: "x" }, now: T0 });
  await fireDueSchedules(db.sql, { now: at(40_000) });
  assert.equal(await runCount(db), 1);
  // Whatever wrote next_due_at (a clock set back, a replayed sweep), the tick row is there.
  await db.sql`update sluice.schedules set next_due_at = ${tick(1)}, following_due_at = null`;
  assert.deepEqual(await fireDueSchedules(db.sql, { now: at(45_000) }), { fired: 0, advanced: 1 });
  assert.equal(await runCount(db), 1);
});

Deno.test("set_schedule_next_due() is a compare-and-set: a due time computed from an older advanced_at changes nothing", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  await schedule(db.sql, flow, { cron: "* * * * *", input: { kind: "cas" }, now: T0 });
  // Fired by SQL alone (as pg_cron does): the schedule now awaits its next due time.
  const [fired] = await db.sql<{ advanced_at: Date }[]>`
    select advanced_at from sluice.fire_due_schedules(${at(40_000)})`;
  assert.deepEqual(fired.advanced_at, at(40_000));
  const due = (advancedAt: Date, next: Date) =>
    db.sql.json([{
      schedule_name: "report",
      advanced_at: advancedAt.toISOString(),
      next_due_at: next.toISOString(),
      following_due_at: null,
    }]);
  // A late heartbeat that computed from the schedule as created (advanced_at T0) loses.
  const [stale] = await db.sql`select sluice.set_schedule_next_due(${
    due(T0, tick(1))
  }::jsonb) as n`;
  assert.equal(stale.n, 0);
  assert.equal((await getSchedule(db.sql, "report"))?.nextDueAt, null);
  const [live] = await db.sql`
    select sluice.set_schedule_next_due(${due(at(40_000), tick(2))}::jsonb) as n`;
  assert.equal(live.n, 1);
  assert.deepEqual((await getSchedule(db.sql, "report"))?.nextDueAt, tick(2));
  const [again] = await db.sql`
    select sluice.set_schedule_next_due(${due(at(40_000), tick(3))}::jsonb) as n`;
  assert.equal(again.n, 0, "a due time already stored is not overwritten");
  assert.deepEqual((await getSchedule(db.sql, "report"))?.nextDueAt, tick(2));
});

Deno.test("missed ticks after an hour down: run-once starts one catch-up run, skip none", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  await schedule(db.sql, flow, {
    name: "catch_up",
    cron: "* * * * *",
    input: { kind: "c" },
    now: T0,
  });
  await schedule(db.sql, flow, {
    name: "skipping",
    cron: "* * * * *",
    input: { kind: "s" },
    missed: "skip",
    now: T0,
  });

  // Both fire their first tick on time.
  assert.equal((await fireDueSchedules(db.sql, { now: at(31_000) })).fired, 2);
  // Everything down from 00:01:01 until 01:01:10: ticks 2..61 were due meanwhile.
  const back = new Date(tick(61).getTime() + 10_000);
  assert.deepEqual(await fireDueSchedules(db.sql, { now: back }), { fired: 1, advanced: 2 });
  assert.deepEqual(await fireDueSchedules(db.sql, { now: back }), { fired: 0, advanced: 0 });

  const catchUp = await getScheduleTicks(db.sql, "catch_up");
  assert.deepEqual(catchUp.map((t) => [t.dueAt, t.catchUp]), [[tick(1), false], [tick(2), true]]);
  assert.deepEqual(catchUp[1].firedAt, back);
  const skipped = await getScheduleTicks(db.sql, "skipping");
  assert.deepEqual(skipped.map((t) => t.dueAt), [tick(1)]);
  // Both are back on the schedule: the next tick after the firing.
  for (const name of ["catch_up", "skipping"]) {
    assert.deepEqual((await getSchedule(db.sql, name))?.nextDueAt, tick(62), name);
  }
  assert.equal(
    (await fireDueSchedules(db.sql, { now: new Date(tick(62).getTime() + 500) })).fired,
    2,
  );
  assert.equal(await runCount(db), 5);
});

Deno.test("a tick fired late but before the next one is due is not missed", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  await schedule(db.sql, flow, {
    cron: "* * * * *",
    input: { kind: "s" },
    missed: "skip",
    now: T0,
  });
  // 00:01:59: tick 1 is late, tick 2 not due yet.
  assert.equal((await fireDueSchedules(db.sql, { now: at(89_000) })).fired, 1);
  const [late] = await getScheduleTicks(db.sql, "report");
  assert.deepEqual([late.dueAt, late.catchUp], [tick(1), false]);
});

Deno.test("a schedule on an alias follows a version switch; one on a concrete flow stays", async () => {
  await using db = await freshDatabase();
  const v1 = reportFlow("orders");
  const v2 = reportFlow("orders_v2");
  await compileFlow(db.sql, v1);
  await compileFlow(db.sql, v2);
  const deployed = defineDeployedFlow(v1, { alias: "orders" });
  const viaAlias = await schedule(db.sql, deployed, {
    name: "via_alias",
    cron: "* * * * *",
    input: { kind: "a" },
    now: T0,
  });
  assert.deepEqual([viaAlias.targetKind, viaAlias.target], ["alias", "orders"]);
  const pinned = await schedule(db.sql, v1, {
    name: "pinned",
    cron: "* * * * *",
    input: { kind: "p" },
    now: T0,
  });
  assert.deepEqual([pinned.targetKind, pinned.target], ["flow", "orders"]);

  await fireDueSchedules(db.sql, { now: at(31_000) });
  const alias = await getAlias(db.sql, "orders");
  await activateAlias(db.sql, "orders", "orders_v2", {
    expectedGeneration: alias!.generation,
    force: true,
  });
  await fireDueSchedules(db.sql, { now: at(91_000) });

  const flowOf = async (name: string) => {
    const ticks = await getScheduleTicks(db.sql, name);
    return await Promise.all(ticks.map(async (t) => {
      const [row] = await db.sql`select flow_slug from sluice.runs where run_id = ${t.runId}`;
      return row.flow_slug;
    }));
  };
  assert.deepEqual(await flowOf("via_alias"), ["orders", "orders_v2"]);
  assert.deepEqual(await flowOf("pinned"), ["orders", "orders"]);
});

Deno.test("a paused schedule fires nothing; resumed, it starts from the resumption without making up the pause", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  await schedule(db.sql, flow, { cron: "* * * * *", input: { kind: "p" }, now: T0 });
  assert.equal(await pauseSchedule(db.sql, "report"), true);
  assert.equal(await pauseSchedule(db.sql, "report"), false, "pausing twice changes nothing");
  assert.ok((await getSchedule(db.sql, "report"))?.pausedAt instanceof Date);
  assert.deepEqual(await fireDueSchedules(db.sql, { now: at(10 * MINUTE) }), {
    fired: 0,
    advanced: 0,
  });

  const resumedAt = at(10 * MINUTE + 5_000);
  assert.equal(await resumeSchedule(db.sql, "report", { now: resumedAt }), true);
  assert.equal(await resumeSchedule(db.sql, "report", { now: resumedAt }), false);
  const resumed = await getSchedule(db.sql, "report");
  assert.equal(resumed?.pausedAt, null);
  assert.deepEqual(resumed?.nextDueAt, tick(11));
  assert.deepEqual(await fireDueSchedules(db.sql, { now: resumedAt }), { fired: 0, advanced: 0 });
  await fireDueSchedules(db.sql, { now: new Date(tick(11).getTime() + 200) });
  assert.deepEqual((await getScheduleTicks(db.sql, "report")).map((t) => t.dueAt), [tick(11)]);

  await assert.rejects(pauseSchedule(db.sql, "nope"), ScheduleNotFoundError);
  await assert.rejects(resumeSchedule(db.sql, "nope"), ScheduleNotFoundError);
  assert.equal(await deleteSchedule(db.sql, "report"), true);
  assert.equal(await deleteSchedule(db.sql, "report"), false);
  assert.deepEqual(await getScheduleTicks(db.sql, "report"), []);
  assert.equal(await runCount(db), 1, "the run a deleted schedule started stays");
});

Deno.test("bad cron expressions, time zones and targets are refused before anything is written", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  const input = { kind: "x" };

  const badCron = await schedule(db.sql, flow, { cron: "61 * * * *", input }).then(
    () => assert.fail("accepted"),
    (error) => error,
  );
  assert.ok(badCron instanceof InvalidCronError);
  assert.equal(badCron.cron, "61 * * * *");
  assert.match(badCron.message, /Invalid cron expression "61 \* \* \* \*": .*minute/);

  await assert.rejects(schedule(db.sql, flow, { cron: "every day", input }), (error) => {
    assert.ok(error instanceof InvalidCronError);
    assert.equal(error.cron, "every day");
    return true;
  });
  await assert.rejects(
    schedule(db.sql, flow, { cron: "0 0 1 1 * 2020", input }),
    /Invalid cron expression "0 0 1 1 \* 2020"/,
  );

  const badZone = await schedule(db.sql, flow, {
    cron: "0 3 * * *",
    input,
    timezone: "Mars/Olympus_Mons",
  }).then(() => assert.fail("accepted"), (error) => error);
  assert.ok(badZone instanceof InvalidTimezoneError);
  assert.equal(badZone.timezone, "Mars/Olympus_Mons");
  assert.match(badZone.message, /Invalid time zone "Mars\/Olympus_Mons"/);

  await assert.rejects(
    schedule(db.sql, "no_such_alias", { cron: "0 3 * * *", input }),
    (error) => error instanceof FlowNotFoundError && error.flowRef === "no_such_alias",
  );
  await assert.rejects(
    schedule(db.sql, flow, { cron: "0 3 * * *", input, name: "bad name" }),
    /schedule name is not a valid slug/,
  );
  assert.deepEqual(await listSchedules(db.sql), []);

  // The same schedule again is the same schedule; other settings under its name are refused.
  const first = await schedule(db.sql, flow, {
    cron: "0 3 * * *",
    input,
    timezone: "Europe/Berlin",
  });
  const again = await schedule(db.sql, flow, {
    cron: "0 3 * * *",
    input,
    timezone: "Europe/Berlin",
  });
  assert.deepEqual(again, first);
  await assert.rejects(
    schedule(db.sql, flow, { cron: "0 4 * * *", input, timezone: "Europe/Berlin" }),
    (error) =>
      error instanceof ScheduleExistsError && error.scheduleName === "report" &&
      error.differences.length === 1 && /cron: "0 3 \* \* \*"/.test(error.differences[0]),
  );
  // 03:00 in Berlin is 02:00 UTC in winter.
  assert.equal(first.nextDueAt?.getUTCHours(), 2);
});

Deno.test("a tick whose run cannot start records why, and the other schedules still fire", async () => {
  await using db = await freshDatabase();
  const gone = reportFlow("gone");
  const kept = reportFlow("kept");
  await compileFlow(db.sql, gone);
  await compileFlow(db.sql, kept);
  await schedule(db.sql, gone, { cron: "* * * * *", input: { kind: "g" }, now: T0 });
  await schedule(db.sql, kept, { cron: "* * * * *", input: { kind: "k" }, now: T0 });
  await db.sql`select sluice.delete_flow_and_data('gone')`;

  assert.deepEqual(await fireDueSchedules(db.sql, { now: at(31_000) }), { fired: 2, advanced: 2 });
  const [failed] = await getScheduleTicks(db.sql, "gone");
  assert.equal(failed.runId, null);
  assert.match(failed.error ?? "", /Cannot start flow "gone": no such flow/);
  assert.match((await getSchedule(db.sql, "gone"))?.lastError ?? "", /no such flow/);
  assert.deepEqual((await getSchedule(db.sql, "gone"))?.nextDueAt, tick(2));
  assert.equal((await runsOf(db, "kept")).length, 1);
});

Deno.test("a schedule keeps its latest 1000 ticks", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  await schedule(db.sql, flow, { cron: "* * * * *", input: { kind: "k" }, now: T0 });
  // 1000 earlier ticks, as if fired long ago.
  await db.sql`
    insert into sluice.schedule_ticks (schedule_name, due_at, fired_at, catch_up)
    select 'report', ${T0}::timestamptz - make_interval(mins => i), ${T0}::timestamptz, false
    from generate_series(1, 1000) i`;
  assert.equal((await fireDueSchedules(db.sql, { now: at(31_000) })).fired, 1);
  const ticks = await getScheduleTicks(db.sql, "report");
  assert.equal(ticks.length, 1000);
  assert.deepEqual(ticks.at(-1)?.dueAt, tick(1));
  assert.deepEqual(ticks[0].dueAt, new Date(T0.getTime() - 999 * MINUTE), "the oldest one went");
});

Deno.test("a transient failure to start a tick's run fires nothing, and the next sweep fires the tick", async () => {
  await using db = await freshDatabase();
  const flow = reportFlow();
  await compileFlow(db.sql, flow);
  await schedule(db.sql, flow, { cron: "* * * * *", input: { kind: "t" }, now: T0 });
  const firer = db.connect(1);
  await firer`set lock_timeout = '200ms'`;
  // A drain check holds the flow's start lock exclusively: starting a run times out on it.
  await db.sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended('sluice.starts:report', 0))`;
    await assert.rejects(fireDueSchedules(firer, { now: at(31_000) }), { code: "55P03" });
  });
  assert.deepEqual(await getScheduleTicks(db.sql, "report"), []);
  assert.deepEqual((await getSchedule(db.sql, "report"))?.nextDueAt, tick(1));
  assert.equal((await fireDueSchedules(firer, { now: at(32_000) })).fired, 1);
  assert.equal((await getScheduleTicks(db.sql, "report"))[0].error, null);
});
