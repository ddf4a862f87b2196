// sluice as users get it from JSR: a temporary user project without a checkout, Deno's JSR_URL
// pointing at a loopback server shaped like JSR (dev/jsr_server.ts) that serves exactly the files
// `deno publish` would upload. Everything resolves through `jsr:` specifiers only: the install
// command, the project's "sluice" task and the generated functions' imports.
import assert from "node:assert/strict";
import { join } from "node:path";
import { serveRegistry } from "./_registry.ts";

const ROOT = new URL("../../", import.meta.url);

const FLOWS = `import { Flow, withStepQueues } from "@sluice/sluice";

export const greetUser = withStepQueues(
  new Flow<{ name: string }>({ slug: "greet_user" })
    .step({ slug: "hello" }, (input) => \`Hello, \${input.name}\`)
    .step({ slug: "shout", dependsOn: ["hello"] }, (input) => input.hello.toUpperCase()),
);
`;

async function deno(cwd: string, env: Record<string, string>, ...args: string[]) {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: { ...env, NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  if (code !== 0) throw new Error(`Cannot run deno ${args.join(" ")} in ${cwd}:\n${text}`);
  return text;
}

Deno.test("jsr:@sluice/sluice@0.1.0 from a JSR-shaped registry: install, generate, the generated functions type-check", async () => {
  await using jsr = await serveRegistry();
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  assert.equal(`${jsr.name}@${jsr.version}`, `${config.name}@${config.version}`);
  const dir = await Deno.makeTempDir({ prefix: "sluice_jsr_project_" });
  try {
    await Deno.mkdir(join(dir, "supabase"));
    const env = { JSR_URL: jsr.url };
    const spec = `jsr:${jsr.name}@${jsr.version}`;

    const installed = await deno(dir, env, "run", "-A", `${spec}/cli`, "install");
    assert.match(installed, /created supabase\/migrations\/\d+_20261130000000_pgmq_extension\.sql/);
    assert.match(installed, new RegExp(`created deno.json mapping @sluice/sluice to ${spec}`));
    // The registry API Deno used: the package's versions, then the version's manifest.
    assert.ok(jsr.requests.includes("@sluice/sluice/meta.json"), jsr.requests.join(" "));
    assert.ok(jsr.requests.includes(`@sluice/sluice/${jsr.version}_meta.json`));
    assert.ok(jsr.requests.includes(`@sluice/sluice/${jsr.version}/cli.ts`));
    // Published modules carry their bare specifiers unfurled through sluice's deno.json, as
    // `deno publish` uploads them; an import inside a doc comment is not an import and stays.
    const served = async (file: string) =>
      await (await fetch(`${jsr.url}@sluice/sluice/${jsr.version}/${file}`)).text();
    const startRun = await served("src/browser/start_run.ts");
    assert.match(
      startRun,
      new RegExp(`from "${config.imports["@supabase/supabase-js"].replace(/[.^]/g, "\\$&")}"`),
    );
    assert.doesNotMatch(startRun, /from "@supabase\/supabase-js"/);
    assert.match(
      await served("src/migrations/install_pgmq.ts"),
      /\* import postgres from "postgres";/,
    );
    const project = JSON.parse(await Deno.readTextFile(join(dir, "deno.json")));
    assert.deepEqual(project.imports, { "@sluice/sluice": spec });

    await Deno.mkdir(join(dir, "supabase/functions/_shared"), { recursive: true });
    await Deno.writeTextFile(join(dir, "supabase/functions/_shared/flows.ts"), FLOWS);
    const generated = await deno(dir, env, "task", "sluice", "functions", "generate");
    assert.match(generated, /2 worker functions/);
    for (const name of ["greet-user--hello", "greet-user--shout"]) {
      const fn = `supabase/functions/${name}`;
      const own = JSON.parse(await Deno.readTextFile(join(dir, fn, "deno.json")));
      assert.equal(own.imports["@sluice/sluice"], spec);
      await deno(dir, env, "check", "--config", `${fn}/deno.json`, `${fn}/index.ts`);
      // Every sluice module of the graph came from the registry, none from a checkout.
      const info = JSON.parse(
        await deno(dir, env, "info", "--json", "--config", `${fn}/deno.json`, `${fn}/index.ts`),
      ) as { modules: { specifier: string }[] };
      const sources = new Set(
        info.modules.map(({ specifier }) =>
          specifier.startsWith(`file://${dir}/`)
            ? "project"
            : specifier.startsWith(`${jsr.url}@sluice/sluice/${jsr.version}/`)
            ? "registry"
            : specifier.split(":")[0]
        ),
      );
      assert.deepEqual([...sources].sort(), ["node", "npm", "project", "registry"]);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
