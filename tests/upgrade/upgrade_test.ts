import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { testWorker } from "../worker/_helpers.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { git, NO_RELEASE, readReleases, ROOT } from "../release/_releases.ts";

// Upgrading a live database: a database built and loaded with work by an earlier version's own
// code (checked out into a temporary worktree), then migrated by the current `sluice migrate`
// and finished by current workers. The "from" version is the latest release in releases.json, or
// the revision SLUICE_UPGRADE_FROM names (development).
//
// In-flight states covered so far: runs queued (started, not yet claimed) by the old producer.

const override = Deno.env.get("SLUICE_UPGRADE_FROM");
const releases = await readReleases();
const from = override ?? releases.at(-1)?.commit;

/** The flow both versions compile: same slug, same shape. */
const FLOW_SOURCE = `
export const upgradeFlow = (double) =>
  new Flow({ slug: "upgrade_plain", timeout: 5 }).step({ slug: "double" }, double);
`;

function upgradeFlow() {
  return new Flow<{ n: number }>({ slug: "upgrade_plain", timeout: 5 })
    .step({ slug: "double" }, (input) => Promise.resolve(input.n * 2));
}

async function run(cwd: string, args: string[], env: Record<string, string>): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  if (!output.success) {
    throw new Error(
      `Cannot run deno ${args.join(" ")} in ${cwd}: ${text}${
        new TextDecoder().decode(output.stderr)
      }`,
    );
  }
  return text;
}

Deno.test({
  name: from === undefined
    ? `a database with queued runs upgrades and finishes (skipped: ${NO_RELEASE})`
    : `a database with queued runs from ${override ? `SLUICE_UPGRADE_FROM=${override}` : from} ` +
      "upgrades through sluice migrate and finishes with current workers",
  ignore: from === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice_upgrade_" });
    const tree = `${dir}/from`;
    await git("worktree", "add", "--detach", tree, from!);
    try {
      await using db = await freshDatabase({ empty: true });
      const env = { DATABASE_URL: db.url };
      await run(tree, ["run", "-A", "cli.ts", "migrate"], env);
      await Deno.writeTextFile(
        `${tree}/_upgrade_producer.ts`,
        `import postgres from "postgres";
import { Flow } from "./src/dsl/flow.ts";
import { compileFlow } from "./src/client/compile_flow.ts";
import { startFlow } from "./src/client/start_flow.ts";
${FLOW_SOURCE}
const sql = postgres(Deno.env.get("DATABASE_URL"), { onnotice: () => {} });
await compileFlow(sql, upgradeFlow(async (input) => input.n * 2));
const ids = [];
for (const n of [1, 2, 3]) ids.push(await startFlow(sql, "upgrade_plain", { n }));
console.log(JSON.stringify(ids));
await sql.end();
`,
      );
      const runIds = JSON.parse(
        (await run(tree, ["run", "-A", "_upgrade_producer.ts"], env)).trim(),
      ) as string[];
      assert.equal(runIds.length, 3);

      await run(ROOT.pathname, ["run", "-A", "cli.ts", "migrate"], env);
      const flow = upgradeFlow();
      await using _worker = await testWorker(flow, db);
      const outputs = [];
      for (const id of runIds) {
        outputs.push(await waitForRun(db.sql, id, { timeoutMs: 20_000, flow }));
      }
      assert.deepEqual(outputs, [{ double: 2 }, { double: 4 }, { double: 6 }]);
      const [over] = await db.sql`
        select count(*)::int as n from sluice.step_tasks where attempts_count > 1`;
      assert.equal(over.n, 0, "a task ran more than once");
    } finally {
      await git("worktree", "remove", "--force", tree);
      await Deno.remove(dir, { recursive: true });
    }
  },
});
