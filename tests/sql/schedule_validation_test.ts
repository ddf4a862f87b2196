// Schedules validated in SQL (issue 43 finding 4): sluice.create_schedule refuses a cron expression
// croner refuses (sluice.cron_problem ports its rules; compared here with the TypeScript side on
// a fixed list and thousands of generated expressions), an over-long one, an unknown time zone and
// an input over the limit, before anything is written. A schedule whose next due time cannot be
// computed is paused with the reason instead of being offered to every sweep again, a sweep
// computes at most 100 due times, and it lets the event loop run while it computes.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { compileFlow, fireDueSchedules, getSchedule, listSchedules } from "../../src/admin/mod.ts";
import { type AwaitingScheduleRow, sweepSchedules } from "../../src/db/schedule_queries.ts";
import { InvalidCronError, scheduleDueTimes } from "../../src/dsl/schedule_times.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";

const FROM = new Date("2030-01-01T00:00:30Z");

/** Expressions each side must judge alike: croner's features, its refusals, and edge cases. */
const CURATED = [
  "* * * * *",
  "0 3 * * *",
  "*/5 * * * *",
  "0 0 1 1 *",
  "30 * * * * *",
  "0 0 12 * * MON-FRI",
  "0 0 * * SAT-SUN",
  "0 0 L * *",
  "0 0 LW * *",
  "0 0 15W * *",
  "0 0 L,15 * *",
  "0 0 * * FRI#2",
  "0 0 * * 5#L",
  "0 0 * * 5L",
  "0 12 1 * +MON",
  "0 0 ? * *",
  "0 0 * JAN-MAR *",
  "0 0 * jan,Feb *",
  "0 0-23/2 * * *",
  "0-60/7 * * * *",
  "@daily",
  "@HOURLY",
  "  @weekly  ",
  "0 0 30 2 *",
  "0 0 * * 7",
  "0 0 * * 0-7",
  // Refused by both:
  "",
  "   ",
  "garbage",
  "* * * *",
  "* * * * * * *",
  "0 0 1 1 * 2030",
  "61 * * * *",
  "* 24 * * *",
  "* * 0 * *",
  "* * 32 * *",
  "* * * 13 *",
  "* * * * 8",
  "*/0 * * * *",
  "*/61 * * * *",
  "5/5 * * * *",
  "/5 * * * *",
  "5-1 * * * *",
  "1-2-3 * * * *",
  "* * L5 * *",
  "* * LW,1 * *",
  "* * 1-15W * *",
  "* * * * 1#6",
  "* * * * 1#0",
  "* * * * MONDAY",
  "* * * * 2SUN",
  "* * * * +",
  "@reboot",
  "@every 5m",
  "2030-01-01T00:00:00",
  "0 0 * * *\u00a0",
  "0\t0 * * *",
  "* * * * * ",
  "1,,2 * * * *",
  "0 0 * * 1##2",
  "* * * JANFEB *",
];

/** Atoms the generator combines into fields. */
const ATOMS = [
  "*",
  "?",
  "0",
  "1",
  "5",
  "7",
  "8",
  "12",
  "13",
  "23",
  "24",
  "30",
  "31",
  "32",
  "59",
  "60",
  "00",
  "007",
  "*/5",
  "*/0",
  "*/61",
  "*/7",
  "*/24",
  "*/31",
  "*/32",
  "/5",
  "5/5",
  "1-5",
  "5-1",
  "0-7",
  "1-5/2",
  "0-59/7",
  "0-60/7",
  "0-24/5",
  "1-31/31",
  "1-12/12",
  "L",
  "LW",
  "l",
  "lw",
  "15W",
  "15w",
  "W",
  "1-15W",
  "5L",
  "5l",
  "FRI#2",
  "mon#5",
  "1#6",
  "5#L",
  "5#l",
  "0#1",
  "MON-FRI",
  "SAT-SUN",
  "sun-sat",
  "-sun",
  "JAN-MAR",
  "jan",
  "DEC",
  "FEB,MAR",
  "+MON",
  "+1",
  "+",
  "++1",
  "x",
  "@",
  "1,,2",
  "-5",
  "5-",
  "1-2-3",
  "#",
  "2#",
  "1##2",
  "**",
  "SUNL",
  "MONDAY",
  "*L",
  "*/2L",
  "1-5L",
  "1-5#2",
  "1-5/2#3",
  "*/2#3",
  "mon,",
  ",1",
  "1.5",
  "jan-",
  "JUL/2",
  "*/JAN",
  "SUN7",
  "7SUN",
  "SUN#1",
  "#1",
  "L#1",
  "MONL",
  "FRIl",
  "2L#1",
];

const NICKNAMES = [
  "@daily",
  "@hourly",
  "@weekly",
  "@monthly",
  "@yearly",
  "@annually",
  "@midnight",
  "@reboot",
  "@every",
  "@DAILY",
  " @daily ",
  "@daily *",
];

/** A deterministic generator (mulberry32), so a failure names a reproducible expression. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generated(count: number): string[] {
  const next = random(43);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)];
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    if (next() < 0.03) {
      out.push(pick(NICKNAMES));
      continue;
    }
    const fields = pick([4, 5, 5, 5, 6, 6, 7]);
    const parts: string[] = [];
    for (let f = 0; f < fields; f++) {
      // Mostly plausible fields, so that many expressions pass and the rules get exercised.
      const atoms = next() < 0.7 ? ["*"] : [pick(ATOMS)];
      while (next() < 0.15) atoms.push(pick(ATOMS));
      parts.push(atoms.join(","));
    }
    out.push(parts.join(next() < 0.9 ? " " : "  "));
  }
  return out;
}

/** Whether sluice's TypeScript side (croner, as schedule() and every sweep run it) accepts it. */
function acceptedByCroner(cron: string): boolean {
  try {
    scheduleDueTimes(cron, "UTC", FROM);
    return true;
  } catch (error) {
    assert.ok(error instanceof InvalidCronError, `${JSON.stringify(cron)}: ${error}`);
    return false;
  }
}

async function sqlProblems(db: TestDatabase, crons: string[]): Promise<(string | null)[]> {
  const rows = await db.sql<{ problem: string | null }[]>`
    select sluice.cron_problem(c) as problem
    from unnest(${crons}::text[]) with ordinality as u(c, n) order by n`;
  return rows.map((row) => row.problem);
}

Deno.test("sluice.cron_problem judges every expression as croner does: a fixed list and 4,000 generated ones", async () => {
  await using db = await freshDatabase();
  const crons = [...CURATED, ...generated(4000)];
  const problems = await sqlProblems(db, crons);
  const disagreements = crons.flatMap((cron, i) =>
    acceptedByCroner(cron) === (problems[i] === null) ? [] : [
      `${JSON.stringify(cron)}: croner ${acceptedByCroner(cron) ? "accepts" : "refuses"}, SQL ${
        problems[i] ?? "accepts"
      }`,
    ]
  );
  assert.deepEqual(disagreements, []);
  const accepted = problems.filter((problem) => problem === null).length;
  // Both outcomes are well represented, or the comparison proves little.
  assert.ok(accepted > 500 && crons.length - accepted > 500, `${accepted} of ${crons.length}`);
  assert.equal(
    problems[CURATED.indexOf("garbage")],
    "expected 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first, got 1",
  );
});

async function flow(db: TestDatabase): Promise<string> {
  const report = new Flow<{ kind: string }>({ slug: "report" })
    .step({ slug: "build" }, (input) => input.kind);
  await compileFlow(db.sql, report);
  return report.slug;
}

/** sluice.create_schedule as a SQL caller (no TypeScript in between) calls it. */
function createInSql(
  db: TestDatabase,
  fields: { name?: string; cron?: string; timezone?: string; input?: string },
) {
  return db.sql`
    select sluice.create_schedule(${fields.name ?? "nightly"}, 'flow', 'report',
      ${fields.input ?? "{}"}::text::jsonb, ${fields.cron ?? "0 3 * * *"},
      ${fields.timezone ?? "UTC"}, 'run-once', now() + interval '1 hour', null)`;
}

Deno.test("create_schedule in SQL refuses a bad cron expression, an over-long one, an unknown time zone and an oversized input, writing nothing", async () => {
  await using db = await freshDatabase();
  await flow(db);
  const refusals: [Parameters<typeof createInSql>[1], string, RegExp][] = [
    [
      { cron: "garbage" },
      "22023",
      /^Cannot create schedule "nightly": invalid cron expression garbage: expected 5 fields \(minute hour day-of-month month day-of-week\), or 6 with seconds first, got 1$/,
    ],
    [{ cron: "61 * * * *" }, "22023", /61 is out of range for the minute field \(0 to 59\)$/],
    [{ cron: "* * * * 2SUN" }, "22023", /a day name must stand alone \(2SUN\)$/],
    [
      { cron: "* ".repeat(500_000) },
      "22023",
      /: the expression is 1000000 characters, more than the limit of 1000$/,
    ],
    [
      { timezone: "Mars/Olympus" },
      "22023",
      /^Cannot create schedule "nightly": unknown time zone "Mars\/Olympus"$/,
    ],
  ];
  for (const [fields, code, message] of refusals) {
    await assert.rejects(
      createInSql(db, fields),
      (error: { code?: string; message?: string; hint?: string }) => {
        assert.equal(error.code, code);
        assert.match(error.message ?? "", message);
        assert.ok((error.hint ?? "").length > 0, `a hint for ${error.message}`);
        return true;
      },
    );
  }
  // 17 MiB of input, built in the server: over the flow's 16 MiB run input limit.
  await assert.rejects(
    db.sql`select sluice.create_schedule('nightly', 'flow', 'report',
      jsonb_build_object('blob', repeat('x', 17 * 1024 * 1024)), '0 3 * * *', 'UTC', 'run-once',
      now() + interval '1 hour', null)`,
    (error: { code?: string; message?: string }) => {
      assert.equal(error.code, "SLL01");
      assert.match(
        error.message ?? "",
        /^Cannot create schedule "nightly": the input is 17825804 bytes as JSON, more than the limit of 16777216 bytes \(max_input_bytes\)$/,
      );
      return true;
    },
  );
  assert.deepEqual(await listSchedules(db.sql), []);

  // What croner reads, SQL takes: names, L, W, #, + and a nickname, in a real zone.
  await createInSql(db, {
    name: "fancy",
    cron: "0 0 L,15W JAN-MAR +FRI#2",
    timezone: "Europe/Berlin",
  });
  await createInSql(db, { name: "daily", cron: "@daily" });
  assert.deepEqual((await listSchedules(db.sql)).map((s) => s.name), ["daily", "fancy"]);
});

/** `count` schedules that never fire again (February 30), awaiting their next due time. */
async function neverFiring(db: TestDatabase, count: number): Promise<void> {
  await db.sql`
    select sluice.create_schedule('never_' || lpad(n::text, 4, '0'), 'flow', 'report', '{}',
      '0 0 30 2 *', 'UTC', 'run-once', now() + interval '1 hour', null)
    from generate_series(1, ${count}) n`;
  // As after a firing by pg_cron: the next due time is owed by the next sweep.
  await db.sql`update sluice.schedules set next_due_at = null`;
}

Deno.test("a schedule that never fires again is paused with the reason, once: later sweeps compute nothing for it", async () => {
  await using db = await freshDatabase();
  await flow(db);
  await neverFiring(db, 150);
  await createInSql(db, { name: "zz_healthy", cron: "* * * * *" });
  await db.sql`update sluice.schedules set next_due_at = null where schedule_name = 'zz_healthy'`;

  // At most 100 per sweep; the healthy one is stored as soon as its turn comes.
  assert.deepEqual(await fireDueSchedules(db.sql), { fired: 0, advanced: 0 });
  assert.deepEqual(await fireDueSchedules(db.sql), { fired: 0, advanced: 1 });
  assert.deepEqual(await fireDueSchedules(db.sql), { fired: 0, advanced: 0 });

  const schedules = await listSchedules(db.sql);
  const never = schedules.filter((s) => s.name.startsWith("never_"));
  assert.equal(never.length, 150);
  for (const schedule of never) {
    assert.notEqual(schedule.pausedAt, null);
    assert.match(schedule.lastError ?? "", /^paused: it never fires after \d{4}-/);
  }
  const healthy = await getSchedule(db.sql, "zz_healthy");
  assert.equal(healthy?.pausedAt, null);
  assert.notEqual(healthy?.nextDueAt, null);
  // Nothing awaits a due time any more: a sweep has nothing to compute.
  const [{ awaiting }] = await db.sql<{ awaiting: number }[]>`
    select count(*)::integer as awaiting from sluice.fire_due_schedules()`;
  assert.equal(awaiting, 0);
});

Deno.test("a sweep computes at most 100 due times and lets the event loop run while it computes", async () => {
  await using db = await freshDatabase();
  await flow(db);
  await neverFiring(db, 120);
  let ticks = 0;
  let ticking = true;
  const tick = () => {
    ticks++;
    if (ticking) setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  const seen: number[] = [];
  // A due time that takes 3 ms of synchronous work, as croner's search for a rare expression.
  const slow = (_row: AwaitingScheduleRow) => {
    seen.push(ticks);
    const until = performance.now() + 3;
    while (performance.now() < until) { /* croner's search */ }
    return { problem: "never fires" };
  };
  try {
    await sweepSchedules(db.sql, undefined, slow);
  } finally {
    ticking = false;
  }
  assert.equal(seen.length, 100);
  // Other callbacks ran between the first due time computed and the last.
  assert.ok(seen[99] > seen[0], `ticks seen while computing: ${seen[0]} .. ${seen[99]}`);
});
