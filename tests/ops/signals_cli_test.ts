// `signals list` and `signals send` of the CLI on a real database (docs/ops.md): a signal to a
// waiting step releases it; one to a mistyped key is kept and listed as pending with nobody
// waiting; filters by key, run and state; an expired signal; bad usage exits 2 and sends nothing;
// a reused signal id with another key exits 1 with the typed error's message.
import assert from "node:assert/strict";
import { getRun } from "../../src/client/get_run.ts";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../worker/_helpers.ts";
import { startWaitingRun, waitingFlow } from "../worker/_waiting_run.ts";
import { opsDone } from "./_ops.ts";

Deno.test("signals send releases a waiting step or says nobody waits; signals list shows state, age and filters", async () => {
  await using db = await freshDatabase();
  const flow = waitingFlow("cli_signals");
  const { worker, runId } = await startWaitingRun(db, flow, "r1");
  await using _worker = worker;
  const signalCount = async () =>
    (await db.sql<{ n: number }[]>`select count(*)::int as n from sluice.signals`)[0].n;

  // Bad usage: nothing is sent or read.
  const notJson = await opsDone(db, "signals", "send", "approval:r1", "d1", "--payload", "{nope");
  assert.equal(notJson.code, 2);
  assert.match(notJson.err, /^Cannot send signal "d1": --payload is not JSON/);
  for (
    const [args, message] of [
      [["--state", "done"], /--state must be one of pending, released, expired, got "done"/],
      [["--run", "r1"], /--run must be a run id \(a UUID\), got "r1"/],
      [["--limit", "0"], /--limit must be a whole number from 1, got "0"/],
    ] as const
  ) {
    const result = await opsDone(db, "signals", "list", ...args);
    assert.equal(result.code, 2, result.err);
    assert.match(result.err, message);
  }
  assert.equal(await signalCount(), 0);
  assert.equal((await opsDone(db, "signals", "list")).out, "No signals match.");

  // The right key releases the waiting step.
  const sent = await opsDone(
    db,
    "signals",
    "send",
    "approval:r1",
    "decision-r1",
    "--payload",
    "true",
  );
  assert.equal(sent.code, 0, sent.err);
  assert.equal(sent.out, 'Sent signal "decision-r1": released 1 step waiting on "approval:r1".');
  await waitUntil(
    async () =>
      (await getRun(db.sql, runId))?.steps.find((s) => s.stepSlug === "decision")
        ?.status === "completed",
    "the decision completed",
  );
  const again = await opsDone(db, "signals", "send", "approval:r1", "decision-r1");
  assert.equal(again.out, 'Signal "decision-r1" was sent before; nothing changed.');

  // A mistyped key releases nothing: the answer says so, and the signal is kept, pending.
  const typo = await opsDone(
    db,
    "signals",
    "send",
    "aproval:r1",
    "decision-typo",
    "--payload",
    "{}",
  );
  assert.equal(typo.code, 0, typo.err);
  const [{ expires_at }] = await db.sql<{ expires_at: Date }[]>`
    select expires_at from sluice.signals where signal_id = 'decision-typo'`;
  assert.equal(
    typo.out,
    `Sent signal "decision-typo": no step waits on "aproval:r1" now; kept until ${
      expires_at.toISOString().replace(/\.\d{3}Z$/, "Z")
    } for a wait of a run started before it (\`signals list --key\` shows it).`,
  );

  // The same id with another key: the typed error's message, exit 1, nothing written.
  const conflict = await opsDone(db, "signals", "send", "other", "decision-typo");
  assert.equal(conflict.code, 1);
  assert.match(conflict.err, /^Cannot send signal "decision-typo".*"aproval:r1"/);
  assert.equal(await signalCount(), 2);

  // An expired one: its lifetime is over.
  await db.sql`insert into sluice.signals (signal_id, signal_key, payload, sent_at, expires_at)
    values ('old', 'approval:r0', 'null', now() - interval '8 days', now() - interval '1 day')`;

  const table = await opsDone(db, "signals", "list");
  assert.equal(table.code, 0, table.err);
  const lines = table.out.split("\n");
  assert.match(
    lines[0],
    /^SIGNAL +KEY +STATE +AGE +WAITING +SENT +EXPIRES +PAYLOAD$/,
  );
  assert.deepEqual(lines.slice(1).map((line) => line.split(/ +/).slice(0, 3)), [
    ["decision-typo", "aproval:r1", "pending"],
    ["decision-r1", "approval:r1", "released"],
    ["old", "approval:r0", "expired"],
  ]);
  assert.match(lines[1], /pending +\d+(\.\d)?(ms|s) +0 +\S+Z +\S+Z +\{\}$/);
  assert.match(lines[3], /expired +192h 0m +0 +\S+Z +- +null$/);

  const only = async (...args: string[]) =>
    JSON.parse((await opsDone(db, "signals", "list", "--json", ...args)).out).map((
      row: { signal_id: string },
    ) => row.signal_id);
  assert.deepEqual(await only("--state", "pending"), ["decision-typo"]);
  assert.deepEqual(await only("--state", "released"), ["decision-r1"]);
  assert.deepEqual(await only("--state", "expired"), ["old"]);
  assert.deepEqual(await only("--key", "approval:r1"), ["decision-r1"]);
  assert.deepEqual(await only("--run", runId), ["decision-r1"], "the keys the run waited on");
  assert.deepEqual(await only("--run", crypto.randomUUID()), []);
  assert.deepEqual(await only("--limit", "1"), ["decision-typo"]);
  const [row] = JSON.parse((await opsDone(db, "signals", "list", "--json", "--limit", "1")).out);
  assert.deepEqual([row.state, row.payload, row.waiting_steps], ["pending", {}, 0]);

  // prune deletes the expired one and keeps the pending one.
  const pruned = await opsDone(db, "prune", "30 days");
  assert.equal(pruned.code, 0, pruned.err);
  assert.match(pruned.out, /and 1 signals expired or consumed\.$/);
  assert.deepEqual(await only(), ["decision-typo", "decision-r1"]);
});
