import assert from "node:assert/strict";
import {
  cleanGrowth,
  evaluateTargets,
  type IntervalSample,
  phaseOf,
  SoakOptionError,
  soakPlan,
} from "../../bench/_soak_targets.ts";

const PLAN = soakPlan({ minutes: 10, holdAt: 4, holdMinutes: 2, intervalSeconds: 60 });

/** A steady interval at 100 runs/s whose every table is 1 MB (`grow` bytes more per interval). */
function interval(
  index: number,
  overrides: Partial<IntervalSample> = {},
  grow = 0,
): IntervalSample {
  return {
    index,
    phase: phaseOf(PLAN, index),
    startedPerSecond: 100,
    completedPerSecond: 100,
    failed: 0,
    backlog: 20,
    p50Ms: 20,
    p95Ms: 40,
    xminAge: 10,
    tables: [
      { name: "sluice.runs", size: 1024 * 1024 + grow * index, dead: 100 },
      { name: "pgmq.q_worker_linear3", size: 1024 * 1024, dead: 50 },
    ],
    load: "1.00 1.00 1.00",
    ...overrides,
  };
}

function verdicts(samples: IntervalSample[]): boolean[] {
  return evaluateTargets(PLAN, samples, 100).map((verdict) => verdict.met);
}

Deno.test("soak plan: phases in whole intervals", () => {
  assert.deepEqual(PLAN, { intervalSeconds: 60, intervals: 10, holdFrom: 4, holdTo: 6 });
  assert.deepEqual(
    Array.from({ length: 10 }, (_, i) => phaseOf(PLAN, i)),
    [
      "clean",
      "clean",
      "clean",
      "clean",
      "held",
      "held",
      "recovery",
      "recovery",
      "recovery",
      "recovery",
    ],
  );
  const quick = soakPlan({ minutes: 3, holdAt: 1, holdMinutes: 1, intervalSeconds: 20 });
  assert.deepEqual(quick, { intervalSeconds: 20, intervals: 9, holdFrom: 3, holdTo: 6 });
});

Deno.test("soak plan: a hold that leaves no recovery or misses an interval boundary is refused", () => {
  assert.throws(
    () => soakPlan({ minutes: 10, holdAt: 8, holdMinutes: 2, intervalSeconds: 60 }),
    (error: unknown) =>
      error instanceof SoakOptionError && error.option === "--hold-minutes" && error.value === 2,
  );
  assert.throws(
    () => soakPlan({ minutes: 10, holdAt: 2.5, holdMinutes: 2, intervalSeconds: 60 }),
    (error: unknown) => error instanceof SoakOptionError && error.option === "--hold-at",
  );
  assert.throws(
    () => soakPlan({ minutes: 10, holdAt: 0, holdMinutes: 2, intervalSeconds: 60 }),
    /Invalid --hold-at 0/,
  );
});

Deno.test("soak targets: a flat soak meets all four", () => {
  const samples = Array.from(
    { length: 10 },
    (_, i) => interval(i, phaseOf(PLAN, i) === "held" ? { p95Ms: 400 } : {}),
  );
  assert.deepEqual(verdicts(samples), [true, true, true, true]);
});

Deno.test("soak targets: each one fails on its own", () => {
  const flat = (i: number) => interval(i);
  // Throughput: one clean interval completes 80 runs/s.
  assert.deepEqual(
    verdicts(
      Array.from(
        { length: 10 },
        (_, i) => i === 2 ? interval(i, { completedPerSecond: 80 }) : flat(i),
      ),
    ),
    [false, true, true, true],
  );
  // Throughput: a backlog of more than a second of load at the end of the clean phase.
  assert.deepEqual(
    verdicts(
      Array.from({ length: 10 }, (_, i) => i === 3 ? interval(i, { backlog: 101 }) : flat(i)),
    ),
    [false, true, true, true],
  );
  // p95 at the end of the clean phase above 1.5x of the first interval's.
  assert.deepEqual(
    verdicts(Array.from({ length: 10 }, (_, i) => i === 3 ? interval(i, { p95Ms: 61 }) : flat(i))),
    [true, false, true, true],
  );
  // Recovery: p95 back only in the third recovery interval.
  assert.deepEqual(
    verdicts(
      Array.from(
        { length: 10 },
        (_, i) => i === 6 || i === 7 ? interval(i, { p95Ms: 61 }) : flat(i),
      ),
    ),
    [true, true, false, true],
  );
  // Recovery in the second interval is in time.
  assert.deepEqual(
    verdicts(Array.from({ length: 10 }, (_, i) => i === 6 ? interval(i, { p95Ms: 61 }) : flat(i))),
    [true, true, true, true],
  );
  // A table growing 300 kB per interval grows more than 256 kB and 10 % over the clean phase's
  // last half (intervals 1 -> 3).
  const growing = Array.from({ length: 10 }, (_, i) => interval(i, {}, 300 * 1024));
  assert.deepEqual(verdicts(growing), [true, true, true, false]);
  assert.deepEqual(cleanGrowth(PLAN, growing).map((table) => [table.name, table.flat]), [
    ["sluice.runs", false],
    ["pgmq.q_worker_linear3", true],
  ]);
});

Deno.test("soak targets: a soak stopped early meets none it has no intervals for", () => {
  const samples = Array.from({ length: 3 }, (_, i) => interval(i));
  const result = evaluateTargets(PLAN, samples, 100);
  assert.deepEqual(result.map((verdict) => verdict.met), [false, false, false, false]);
  assert.match(result[0].figures, /soak incomplete/);
});
