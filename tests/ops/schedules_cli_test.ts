// The schedules commands of the ops CLI on a real database: create on a concrete flow or an alias,
// usage and validation errors (exit 2, naming the bad value, nothing written), an unknown target
// or a taken name (exit 1), list as a table and as JSON, pause, resume, delete.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { freshDatabase } from "../_db.ts";
import { opsDone } from "./_ops.ts";

const report = new Flow<{ kind: string }>({ slug: "report" })
  .step({ slug: "build" }, (input) => input.kind);

Deno.test("schedules create, list, pause, resume and delete; bad input exits 2 and writes nothing", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, report);
  const count = async () =>
    (await db.sql<{ n: number }[]>`select count(*)::int as n from sluice.schedules`)[0].n;

  for (
    const [args, message] of [
      [["--flow", "report"], /--cron EXPR is required/],
      [["--cron", "0 3 * * *"], /exactly one of --flow SLUG .* and --alias NAME/],
      [["--flow", "report", "--alias", "report", "--cron", "0 3 * * *"], /exactly one of/],
      [["--flow", "report", "--cron", "0 25 * * *"], /Invalid cron expression "0 25 \* \* \*"/],
      [
        ["--flow", "report", "--cron", "0 3 * * *", "--timezone", "Europe/Atlantis"],
        /Invalid time zone "Europe\/Atlantis"/,
      ],
      [["--flow", "report", "--cron", "0 3 * * *", "--missed", "twice"], /got "twice"/],
      [["--flow", "report", "--cron", "0 3 * * *", "--input", "{nope"], /--input is not JSON/],
    ] as const
  ) {
    const result = await opsDone(db, "schedules", "create", "nightly", ...args);
    assert.equal(result.code, 2, result.err);
    assert.match(result.err, message);
  }
  assert.equal(await count(), 0);

  const unknown = await opsDone(
    db,
    "schedules",
    "create",
    "nightly",
    "--flow",
    "no_such_flow",
    "--cron",
    "0 3 * * *",
  );
  assert.equal(unknown.code, 1);
  assert.equal(
    unknown.err,
    'Cannot create schedule "nightly": no flow "no_such_flow"; the flows are "report"',
  );

  const created = await opsDone(
    db,
    "schedules",
    "create",
    "nightly",
    "--flow",
    "report",
    "--cron",
    "0 3 * * *",
    "--input",
    '{"kind": "daily"}',
    "--missed",
    "skip",
  );
  assert.equal(created.code, 0, created.err);
  assert.match(created.out, /Schedule "nightly" starts flow "report" on "0 3 \* \* \*" \(UTC\)/);
  const taken = await opsDone(
    db,
    "schedules",
    "create",
    "nightly",
    "--alias",
    "report",
    "--cron",
    "0 3 * * *",
  );
  assert.equal(taken.code, 1);
  assert.match(taken.err, /exists with other settings \(targetKind: "flow" \(stored\) vs "alias"/);

  const listed = await opsDone(db, "schedules", "list");
  assert.match(listed.out, /^SCHEDULE\s+TARGET\s+CRON/);
  assert.match(listed.out, /nightly\s+flow:report\s+0 3 \* \* \*\s+UTC\s+skip\s+active/);
  const json = JSON.parse((await opsDone(db, "schedules", "list", "--json")).out);
  assert.deepEqual(json.map((s: { name: string; input: unknown }) => [s.name, s.input]), [
    ["nightly", { kind: "daily" }],
  ]);

  assert.match((await opsDone(db, "schedules", "pause", "nightly")).out, /Paused/);
  assert.match((await opsDone(db, "schedules", "pause", "nightly")).out, /paused already/);
  assert.match((await opsDone(db, "schedules", "list")).out, /skip\s+paused/);
  assert.match((await opsDone(db, "schedules", "resume", "nightly")).out, /Resumed/);
  assert.match((await opsDone(db, "schedules", "resume", "nightly")).out, /was not paused/);
  const missing = await opsDone(db, "schedules", "pause", "daily");
  assert.equal(missing.code, 1);
  assert.match(missing.err, /No schedule "daily"/);
  assert.match((await opsDone(db, "schedules", "delete", "nightly")).out, /Deleted/);
  const again = await opsDone(db, "schedules", "delete", "nightly");
  assert.equal(again.code, 1);
  assert.match(again.err, /no such schedule/);
  assert.equal((await opsDone(db, "schedules", "list")).out, "No schedules.");
});
