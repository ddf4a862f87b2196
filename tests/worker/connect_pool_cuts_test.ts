// Connections cut under processes whose pools come from sluice's own connect().
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "./_helpers.ts";

function spawn(url: string, role: string, count = 0) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./_connect_pool_worker.ts", import.meta.url).pathname,
      url,
      role,
      String(count),
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stderr = new Response(child.stderr).text();
  let text = "";
  let exited = false;
  child.status.then(() => exited = true);
  const readLine = async (line: string) => {
    while (!text.includes(`${line}\n`)) {
      const { value, done } = await stdout.read();
      if (done) throw new Error(`${role} exited early: ${await stderr}`);
      text += value;
    }
  };
  return {
    readLine,
    get exited() {
      return exited;
    },
    stderr,
    async [Symbol.asyncDispose]() {
      if (!exited) child.kill("SIGKILL");
      await child.status;
      await stdout.cancel().catch(() => {});
    },
  };
}

Deno.test("a worker and a producer on connect() pools survive repeated connection cuts", async () => {
  await using db = await freshDatabase();
  await using worker = spawn(db.url, "worker");
  await worker.readLine("READY");
  await using producer = spawn(db.url, "producer", 400);
  await producer.readLine("READY");

  let terminated = 0;
  // Rounds until 15 connections were cut, each once a process has reopened one (a condition, not
  // a pause: however slow the machine, every round cuts live connections).
  while (terminated < 15 && !worker.exited && !producer.exited) {
    terminated += await waitUntil(async () => {
      if (worker.exited || producer.exited) return -1;
      const [{ n }] = await db.sql`
        select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
          and application_name in ('cut-worker', 'cut-producer')`;
      return n;
    }, `a reopened connection to cut (${terminated} cut so far)`);
  }
  const alive = async () => {
    if (worker.exited) assert.fail(`the worker process died: ${await worker.stderr}`);
    if (producer.exited) assert.fail(`the producer process died: ${await producer.stderr}`);
  };
  await alive();
  assert.ok(terminated >= 15, `terminated ${terminated} connections`);
  await producer.readLine("PRODUCED");
  try {
    await waitUntil(
      async () => {
        await alive();
        const [{ done }] = await db.sql`
        select count(*)::int as done from sluice.runs where status = 'completed'`;
        return done === 400;
      },
      "400 completed runs",
      // Tasks whose claim answers a cut lost come back through stall recovery after 35 s.
      90_000,
    );
  } catch (error) {
    // Enough to tell a lost claim (started, waiting for stall recovery) from a worker that stopped
    // reading (queued, visible messages) or a hung driver (the worker's own log).
    console.error(
      await db.sql`select status, attempts_count, count(*)::int from sluice.step_tasks
        group by 1, 2 order by 1, 2`,
    );
    console.error(
      await db.sql`select count(*)::int as messages, count(*) filter (where vt <= now())::int
        as visible from pgmq.q_cuts`,
    );
    await worker[Symbol.asyncDispose]();
    console.error(`worker log:\n${(await worker.stderr).split("\n").slice(-40).join("\n")}`);
    throw error;
  }
  await alive();
});
