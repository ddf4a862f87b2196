// The errors a newcomer meets at the command line, through the real `sluice` process: a flow
// definition error in `functions generate` and `dev`, a malformed DATABASE_URL. Each is one line
// naming the file or the value and the problem, exit 1, no stack trace unless SLUICE_DEBUG=1
// asks for one, and never the password of a connection string.
import assert from "node:assert/strict";
import { join } from "node:path";

const CLI = new URL("../../cli.ts", import.meta.url).pathname;
const MOD = new URL("../../mod.ts", import.meta.url).href;

async function sluice(
  dir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-lock", CLI, ...args],
    cwd: dir,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
  }).output();
  return {
    code,
    stdout: new TextDecoder().decode(stdout),
    stderr: new TextDecoder().decode(stderr),
  };
}

async function projectWithFlows(flows: string): Promise<{ dir: string } & AsyncDisposable> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "sluice-cli-errors-" }));
  await Deno.mkdir(join(dir, "supabase/functions/_shared"), { recursive: true });
  await Deno.writeTextFile(join(dir, "deno.json"), "{}\n");
  await Deno.writeTextFile(join(dir, "supabase/functions/_shared/flows.ts"), flows);
  return { dir, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

const DUPLICATE_STEP = `import { Flow } from ${JSON.stringify(MOD)};

export const orders = new Flow<{ id: number }>({ slug: "orders" })
  .step({ slug: "load" }, () => 1)
  .step({ slug: "load" }, () => 2);
`;

Deno.test("a flow definition error is one line naming the file and the problem in functions generate and dev", async () => {
  await using project = await projectWithFlows(DUPLICATE_STEP);
  const env = { DATABASE_URL: "postgres://postgres@127.0.0.1:1/postgres" };
  for (const args of [["functions", "generate"], ["dev"]]) {
    const result = await sluice(project.dir, args, env);
    assert.equal(result.code, 1, `${args.join(" ")}: ${result.stderr}`);
    assert.equal(
      result.stderr,
      "Cannot load the flows module supabase/functions/_shared/flows.ts: FlowDefinitionError: " +
        'Cannot add step "load" to flow "orders": step "load" already exists (slugs are compared ' +
        "case-insensitively) (at supabase/functions/_shared/flows.ts:5:4)\n",
      args.join(" "),
    );
    const debug = await sluice(project.dir, args, { ...env, SLUICE_DEBUG: "1" });
    assert.equal(debug.code, 1);
    assert.match(debug.stderr, /^ {4}at .*flows\.ts:5:4/m, "SLUICE_DEBUG=1 shows the stack");
  }
  const entries = [...Deno.readDirSync(join(project.dir, "supabase/functions"))].map((e) => e.name);
  assert.deepEqual(entries, ["_shared"], "nothing generated");
});

Deno.test("a malformed DATABASE_URL is one line with the password masked, for every command", async () => {
  await using project = await projectWithFlows(DUPLICATE_STEP);
  const env = { DATABASE_URL: "postgres://postgres:s3cret#pw@127.0.0.1:port/postgres" };
  for (const args of [["coverage"], ["migrate"], ["ops", "runs"]]) {
    const result = await sluice(project.dir, args, env);
    assert.equal(result.code, 1, `${args.join(" ")}: ${result.stderr}`);
    assert.equal(result.stderr.trimEnd().split("\n").length, 1, result.stderr);
    assert.match(
      result.stderr,
      /Cannot connect: the connection string "postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:port\/postgres" is not a valid URL; expected postgres:\/\/user:password@host:port\/database/,
    );
    assert.doesNotMatch(result.stderr + result.stdout, /s3cret/);
  }
});

const ONE_FLOW = `import { Flow } from ${JSON.stringify(MOD)};

export const orders = new Flow<{ id: number }>({ slug: "orders" }).step({ slug: "load" }, () => 1);
`;

Deno.test("a DATABASE_URL without a scheme is one line naming it and the fix, never the default database", async () => {
  await using project = await projectWithFlows(ONE_FLOW);
  for (
    const [url, shown, fix] of [
      [
        "localhost:5651",
        "localhost:5651",
        " (here postgres://postgres:postgres@localhost:5651/postgres)",
      ],
      ["postgres:s3cret@localhost:5651/postgres", "postgres:***@localhost:5651/postgres", ""],
    ]
  ) {
    for (const args of [["coverage"], ["migrate"], ["ops", "runs"], ["dev"]]) {
      const result = await sluice(project.dir, args, { DATABASE_URL: url });
      assert.equal(result.code, 1, `${args.join(" ")}: ${result.stdout}${result.stderr}`);
      assert.equal(result.stderr.trimEnd().split("\n").length, 1, result.stderr);
      assert.ok(
        result.stderr.includes(
          `Cannot connect: the connection string ${JSON.stringify(shown)} has no postgres:// ` +
            "scheme, so it names no database; write it as " +
            `postgres://user:password@host:port/database${fix}\n`,
        ),
        `${args.join(" ")}: ${result.stderr}`,
      );
      assert.doesNotMatch(result.stderr + result.stdout, /s3cret/);
    }
  }
});
