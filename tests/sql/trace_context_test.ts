// The SQL start path records the caller's W3C trace context (sluice.caller_traceparent): the
// setting sluice.traceparent, else the traceparent header PostgREST puts in request.headers.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { compileFlow } from "./_fixtures.ts";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

Deno.test("start_flow records sluice.traceparent, else the request's header, on the run", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "traced", steps: [{ slug: "only" }] });
  const start = (settings: Record<string, string>) =>
    db.sql.begin(async (tx) => {
      for (const [name, value] of Object.entries(settings)) {
        await tx`select pg_catalog.set_config(${name}, ${value}, true)`;
      }
      const [{ run_id }] = await tx`select sluice.start_flow('traced', '{}'::jsonb) as run_id`;
      const [{ traceparent }] = await tx`
        select traceparent from sluice.runs where run_id = ${run_id}`;
      return traceparent;
    });
  const header = JSON.stringify({ traceparent: TRACEPARENT.replace("-01", "-00") });
  assert.equal(await start({}), null);
  assert.equal(await start({ "sluice.traceparent": TRACEPARENT }), TRACEPARENT);
  assert.equal(await start({ "request.headers": header }), TRACEPARENT.replace("-01", "-00"));
  // The setting wins; an empty one is an unset one.
  assert.equal(
    await start({ "sluice.traceparent": TRACEPARENT, "request.headers": header }),
    TRACEPARENT,
  );
  assert.equal(
    await start({ "sluice.traceparent": "", "request.headers": header }),
    TRACEPARENT.replace("-01", "-00"),
  );
  assert.equal(await start({ "request.headers": '{"traceparent": "00-zz"}' }), null);
  assert.equal(await start({ "request.headers": "not json" }), null);
});

Deno.test("a malformed sluice.traceparent is refused, naming it, before anything is written", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "traced", steps: [{ slug: "only" }] });
  for (
    const bad of [
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "traceparent",
    ]
  ) {
    await assert.rejects(
      db.sql.begin(async (tx) => {
        await tx`select pg_catalog.set_config('sluice.traceparent', ${bad}, true)`;
        await tx`select sluice.start_flow('traced', '{}'::jsonb)`;
      }),
      (error: { code?: string; message?: string }) =>
        error.code === "22023" && error.message!.includes(`sluice.traceparent '${bad}'`),
    );
  }
  const [{ count }] = await db.sql`select count(*)::int as count from sluice.runs`;
  assert.equal(count, 0);
});
