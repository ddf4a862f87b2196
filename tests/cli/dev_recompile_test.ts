// `sluice dev` after a flow's shape changed, with a run of it waiting on a signal: the recompile
// would delete that run, so dev refuses to start, naming the run, its step and its signal key and
// the commands that clear the way, and deletes nothing. Once the run is cancelled with the command
// it names, dev recompiles and its log says which runs the recompile deleted.
import assert from "node:assert/strict";
import { join } from "node:path";
import { main } from "../../src/cli/main.ts";
import { getRun } from "../../src/client/get_run.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { freshDatabase } from "../_db.ts";
import { Output } from "../ops/_ops.ts";
import { waitUntil } from "../_support.ts";

const MOD = new URL("../../mod.ts", import.meta.url).href;

function flowsModule(extraStep: boolean): string {
  return `import { Flow, signalPayload } from ${JSON.stringify(MOD)};

export const approvals = new Flow<{ id: string }>({ slug: "dev_approvals" })
  .step({ slug: "ask" }, (input) => ({ id: input.id }))
  .waitForSignal({
    slug: "decision",
    dependsOn: ["ask"],
    key: (deps) => \`approval:\${deps.ask.id}\`,
    payload: signalPayload<boolean>(),
    timeoutSeconds: 3600,
  })${extraStep ? `\n  .step({ slug: "notify", dependsOn: ["decision"] }, () => "sent")` : ""};
`;
}

/** A project directory whose flows module holds the flow, with or without its third step. */
async function project(extraStep: boolean): Promise<string> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "sluice-dev-recompile-" }));
  await Deno.mkdir(join(dir, "supabase/functions/_shared"), { recursive: true });
  await Deno.writeTextFile(join(dir, "deno.json"), "{}\n");
  await Deno.writeTextFile(
    join(dir, "supabase/functions/_shared/flows.ts"),
    flowsModule(extraStep),
  );
  return dir;
}

/** Runs `sluice dev` on the project in `dir` until it prints that its workers run; returns how to stop it. */
async function devRunning(dir: string, databaseUrl: string) {
  const stop = new AbortController();
  const output = new Output();
  const code = main(["dev", "--config", join(dir, "deno.json")], {
    databaseUrl,
    signal: stop.signal,
    io: output.io,
  });
  let ended = false;
  code.finally(() => ended = true);
  await waitUntil(
    () => {
      if (ended) throw new Error(`sluice dev ended:\n${output.text}\n${output.errors}`);
      return output.out.some((line) => line.includes(" worker functions running "));
    },
    "sluice dev to run its workers",
  );
  return { output, stop: async () => (stop.abort(), await code) };
}

Deno.test("sluice dev refuses to recompile over a run waiting on a signal, names it, and deletes nothing", async () => {
  await using db = await freshDatabase();
  const v1 = await project(false);
  const v2 = await project(true);
  try {
    const first = await devRunning(v1, db.url);
    const runId = await startFlow(db.sql, "dev_approvals", { id: "42" });
    await waitUntil(
      async () => (await getRun(db.sql, runId))?.steps.some((s) => s.status === "waiting"),
      "the signal wait to wait",
    );
    assert.equal(await first.stop(), 0);

    // The changed shape: dev stops at once, before any worker runs, and says what is in the way.
    const refused = new Output();
    const stopRefused = new AbortController();
    let ended = false;
    const refusing = main(["dev", "--config", join(v2, "deno.json")], {
      databaseUrl: db.url,
      signal: stopRefused.signal,
      io: refused.io,
    }).finally(() => ended = true);
    const ran = await waitUntil(
      () => ended ? "ended" : refused.text.includes(" worker functions running ") && "ran",
      "sluice dev to refuse or run",
    );
    stopRefused.abort();
    assert.equal(ran, "ended", `sluice dev recompiled over the waiting run:\n${refused.text}`);
    assert.equal(await refusing, 1, refused.text);
    assert.match(refused.errors, /^Cannot start sluice dev: Cannot recompile flow "dev_approvals"/);
    assert.match(
      refused.errors,
      new RegExp(`run ${runId} step "decision" waiting for signal "approval:42"`),
    );
    assert.match(refused.errors, /`sluice runs cancel --flow dev_approvals --reason TEXT`/);
    assert.match(refused.errors, /`sluice flows reset dev_approvals --force`/);
    assert.doesNotMatch(refused.errors, /\n\s+at /, "no stack trace");
    const kept = await getRun(db.sql, runId);
    assert.equal(kept?.status, "started");
    assert.equal(kept?.steps.find((s) => s.stepSlug === "decision")?.status, "waiting");

    // Cancelled with the command the error names, the run no longer stands in the way.
    const cancel = new Output();
    assert.equal(
      await main(["runs", "cancel", "--flow", "dev_approvals", "--reason", "reshaping"], {
        databaseUrl: db.url,
        io: cancel.io,
      }),
      0,
      cancel.errors,
    );
    const second = await devRunning(v2, db.url);
    const started = second.output.out.find((line) => line.includes("worker started"));
    assert.match(started ?? "", /compile_outcome=recompiled/);
    assert.match(started ?? "", /deleted_runs=\{"cancelled":1\}/);
    assert.equal(await getRun(db.sql, runId), null);
    assert.equal(await second.stop(), 0);
  } finally {
    await Deno.remove(v1, { recursive: true });
    await Deno.remove(v2, { recursive: true });
  }
});
