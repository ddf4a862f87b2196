// The type checker's own words for a typo'd `stepSlug`: `deno check` on a small fixture must name
// the bad slug and the valid ones ('"chrage"' is not assignable to '"charge" | "ship"'), for a
// step-queued and a deployed step-queued flow, through every entry point; never the "No overload
// matches this call" (TS2769) that named only the DeployedFlow brand. The `@ts-expect-error` lines
// of step_workers.ts prove that the typo is rejected; this proves what the user reads.
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

const FIXTURE = (mod: string, edge: string, admin: string) => `
import { createWorkerHandler, serveWorker } from ${JSON.stringify(edge)};
import { resolveWorkerTarget } from ${JSON.stringify(admin)};
import { defineDeployedFlow, Flow, startWorker, withStepQueues } from ${JSON.stringify(mod)};

const orders = withStepQueues(
  new Flow<{ id: number }>({ slug: "orders" })
    .step({ slug: "charge" }, (input) => input.id)
    .step({ slug: "ship", dependsOn: ["charge"] }, (deps) => deps.charge),
);
const deployed = defineDeployedFlow(orders, { alias: "orders_live" });

startWorker(orders, { connectionString: "postgres://", stepSlug: "chrage" });
startWorker(deployed, { connectionString: "postgres://", stepSlug: "chrage" });
createWorkerHandler(orders, { stepSlug: "chrage" });
serveWorker(deployed, { stepSlug: "chrage" });
resolveWorkerTarget(orders, { stepSlug: "chrage" });
startWorker(orders, { connectionString: "postgres://" });
`;

/** `deno check` of the fixture: its exit code and its diagnostics, without colours. */
async function checkFixture(): Promise<{ code: number; output: string }> {
  const dir = await Deno.makeTempDir({ prefix: "sluice_step_slug_diagnostics_" });
  try {
    const file = `${dir}/fixture.ts`;
    await Deno.writeTextFile(
      file,
      FIXTURE(
        new URL("mod.ts", ROOT).href,
        new URL("src/edge/mod.ts", ROOT).href,
        new URL("src/admin/mod.ts", ROOT).href,
      ),
    );
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--config", new URL("deno.json", ROOT).pathname, file],
      cwd: dir,
      env: { NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const decoder = new TextDecoder();
    return { code, output: decoder.decode(stdout) + decoder.decode(stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a typo'd stepSlug is reported with the bad slug and the flow's valid slugs", async () => {
  const { code, output } = await checkFixture();
  assert.notEqual(code, 0, output);
  const typo = `Type '"chrage"' is not assignable to type '"charge" | "ship"'`;
  // One diagnostic per typo'd call: startWorker (plain and deployed), createWorkerHandler,
  // serveWorker (deployed), resolveWorkerTarget.
  assert.equal(output.split(typo).length - 1, 5, output);
  // A missing stepSlug names the slugs to choose from, too.
  assert.match(
    output,
    /Property 'stepSlug' is missing in type '\{ connectionString: string; \}' but required in type '\{ readonly stepSlug: "charge" \| "ship"; \}'/,
  );
  assert.doesNotMatch(output, /TS2769|No overload matches this call|deployedFlowBrand/);
  assert.match(output, /Found 6 errors/);
});
