// fence confirm with a manifest that lists flows this database never ran (NOT COMPILED): the
// refusal says how to scope it, and --functions checks only the named functions.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { freshDatabase } from "../_db.ts";
import { diffManifests } from "../../src/cli/commands/manifest.ts";
import { opsDone } from "./_ops.ts";
import { testWorker } from "../worker/_helpers.ts";

const served = new Flow<{ n: number }>({ slug: "served_flow" }).step({ slug: "work" }, () => 1);

Deno.test("fence confirm names NOT COMPILED flows with how to scope it, and --functions scopes it", async () => {
  await using db = await freshDatabase();
  const manifest = await Deno.makeTempFile({ suffix: ".manifest.json" });
  const entry = (flow: string, name: string) => ({
    function_name: name,
    flow_slug: flow,
    step_slug: null,
    queue_name: flow,
    queue_mode: "flow",
  });
  await Deno.writeTextFile(
    manifest,
    JSON.stringify({
      functions: [entry("served_flow", "served-flow"), entry("other_flow", "other-flow")],
    }),
  );
  await using _worker = await testWorker(served, db);
  try {
    const all = await opsDone(db, "fence", "confirm", "--manifest", manifest);
    assert.equal(all.code, 1);
    assert.match(all.out, /^other-flow +other_flow +\* +other_flow +0 +NOT COMPILED$/m);
    assert.match(
      all.err,
      /NOT COMPILED: no worker of "other_flow" ever started in this database\. If this deploy does not run that flow, confirm only the functions it does run: fence confirm --functions NAME,\.\.\./,
    );

    const scoped = await opsDone(
      db,
      "fence",
      "confirm",
      "--manifest",
      manifest,
      "--functions",
      "served-flow",
    );
    assert.equal(scoped.code, 0, scoped.err);
    assert.match(scoped.out, /All 1 routes of the manifest have a live worker/);

    const typo = await opsDone(db, "fence", "confirm", "--manifest", manifest, "--functions", "x");
    assert.equal(typo.code, 1);
    assert.match(typo.err, /--functions names "x", which the manifest does not list/);
  } finally {
    await Deno.remove(manifest);
  }
});

Deno.test("fence confirm checks every worker of a co-hosting function, not only its first", async () => {
  await using db = await freshDatabase();
  const manifest = await Deno.makeTempFile({ suffix: ".manifest.json" });
  const route = (flow: string) => ({
    flow_slug: flow,
    step_slug: null,
    queue_name: flow,
    queue_mode: "flow",
  });
  await Deno.writeTextFile(
    manifest,
    JSON.stringify({
      functions: [{
        function_name: "office-light",
        ...route("served_flow"),
        workers: [route("served_flow"), route("other_flow")],
      }],
    }),
  );
  await using _worker = await testWorker(served, db);
  try {
    const result = await opsDone(db, "fence", "confirm", "--manifest", manifest);
    assert.equal(result.code, 1, result.out);
    assert.match(result.out, /^office-light +served_flow +work +served_flow +1 +ok$/m);
    assert.match(result.out, /^office-light +other_flow +\* +other_flow +0 +NOT COMPILED$/m);
  } finally {
    await Deno.remove(manifest);
  }
});

Deno.test("fence diff: a co-hosting function changes when any of its workers' routes does", () => {
  const route = (flow: string) => ({
    flow_slug: flow,
    step_slug: "work",
    queue_name: `${flow}__work`,
    queue_mode: "step",
  });
  const host = (...flows: string[]) => ({
    function_name: "office-light",
    ...route(flows[0]),
    workers: flows.map(route),
  });
  const changes = (before: string[], after: string[]) =>
    diffManifests([host(...before)], [host(...after)]).map((entry) => entry.change);
  assert.deepEqual(changes(["a", "b"], ["a", "b"]), ["unchanged"]);
  // The first worker is the same; the second is a new version's.
  assert.deepEqual(changes(["a", "b"], ["a", "b_v2"]), ["changed"]);
  assert.deepEqual(changes(["a"], ["a", "b"]), ["changed"]);
});
