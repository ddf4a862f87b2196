// `sluice dev` without a database server: with no DATABASE_URL (or with SLUICE_EMBEDDED=1 even
// where one is set) it starts the embedded database in its own process, installs sluice, runs the
// flows module's workers on it and prints the URL that other processes start runs with. This
// test is such another process: it starts a run there and waits for it over LISTEN.
import assert from "node:assert/strict";
import { join } from "node:path";
import { connect, startFlow, waitForRun } from "../../mod.ts";

const CLI = new URL("../../cli.ts", import.meta.url).pathname;
const MOD = new URL("../../mod.ts", import.meta.url).href;

const FLOWS = `import { Flow } from ${JSON.stringify(MOD)};

export const greet = new Flow<{ name: string }>({ slug: "dev_greet" })
  .step({ slug: "hello" }, (input) => \`Hello, \${input.name}!\`)
  .step({ slug: "shout", dependsOn: ["hello"] }, (deps) => deps.hello.toUpperCase());
`;

/** Reads `stream` line by line into `lines`; resolves `found` with the first line matching. */
function watchLines(stream: ReadableStream<Uint8Array>, pattern: RegExp) {
  const lines: string[] = [];
  const found = Promise.withResolvers<RegExpMatchArray>();
  const done = (async () => {
    let rest = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      rest += chunk;
      const parts = rest.split("\n");
      rest = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        const match = line.match(pattern);
        if (match !== null) found.resolve(match);
      }
    }
    found.reject(new Error(`sluice dev ended before ${pattern}:\n${lines.join("\n")}`));
  })();
  return { lines, found: found.promise, done };
}

for (
  const [name, extra] of [
    ["no DATABASE_URL", {}],
    // An unreachable server: only the embedded database can make this work.
    ["SLUICE_EMBEDDED=1", {
      SLUICE_EMBEDDED: "1",
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/postgres",
    }],
  ] as const
) {
  Deno.test(`sluice dev runs its workers on the embedded database (${name})`, async () => {
    const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "sluice-dev-embedded-" }));
    try {
      await Deno.mkdir(join(dir, "supabase/functions/_shared"), { recursive: true });
      await Deno.writeTextFile(join(dir, "deno.json"), "{}\n");
      const flowsPath = join(dir, "supabase/functions/_shared/flows.ts");
      await Deno.writeTextFile(flowsPath, FLOWS);
      const env: Record<string, string> = { ...Deno.env.toObject(), NO_COLOR: "1", ...extra };
      if (!("DATABASE_URL" in extra)) delete env.DATABASE_URL;
      const dev = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-lock", CLI, "dev"],
        cwd: dir,
        env,
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const stderr = new Response(dev.stderr).text();
      const out = watchLines(dev.stdout, /worker functions running/);
      try {
        await out.found;
        const announced = out.lines.find((line) =>
          line.includes("embedded database") && line.includes("DATABASE_URL=")
        );
        assert.ok(announced, `no embedded database announced:\n${out.lines.join("\n")}`);
        const url = announced.match(/DATABASE_URL=(\S+)/)?.[1];
        assert.ok(url, announced);
        const { greet } = await import(new URL(`file://${flowsPath}`).href);
        const sql = connect(url, { max: 2 });
        try {
          const runId = await startFlow(sql, greet, { name: "Ada" });
          assert.deepEqual(await waitForRun(sql, runId, { timeoutMs: 30_000 }), {
            shout: "HELLO, ADA!",
          });
        } finally {
          await sql.end();
        }
      } catch (error) {
        stop(dev);
        await out.done;
        // A missing line most likely means dev exited: its stderr says why.
        throw new Error(`sluice dev: ${error}\n${out.lines.join("\n")}\n${await stderr}`, {
          cause: error,
        });
      }
      stop(dev);
      await out.done;
      const { code } = await dev.status;
      assert.equal(code, 0, `${out.lines.join("\n")}\n${await stderr}`);
      // The workers log, prefixed with their function name.
      assert.ok(
        out.lines.some((line) => /^\[[a-z0-9_-]+\] info /.test(line)),
        out.lines.join("\n"),
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

/** Stops `dev` unless it has exited already. */
function stop(dev: Deno.ChildProcess): void {
  try {
    dev.kill("SIGTERM");
  } catch {
    // Already exited.
  }
}

/** A port the kernel just handed out, free a moment later. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

Deno.test("sluice dev says at once what it does, listens on --port and starts from the cached snapshot", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "sluice-dev-snapshot-" }));
  try {
    await Deno.mkdir(join(dir, "supabase/functions/_shared"), { recursive: true });
    await Deno.writeTextFile(join(dir, "deno.json"), "{}\n");
    await Deno.writeTextFile(join(dir, "supabase/functions/_shared/flows.ts"), FLOWS);
    const cache = join(dir, "cache");
    /** Runs `sluice dev --port <port>` until its workers run; its stdout lines. */
    const devUntilRunning = async (port: number) => {
      const env: Record<string, string> = {
        ...Deno.env.toObject(),
        NO_COLOR: "1",
        SLUICE_EMBEDDED_CACHE: cache,
      };
      delete env.DATABASE_URL;
      const dev = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-lock", CLI, "dev", "--port", String(port)],
        cwd: dir,
        env,
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const stderr = new Response(dev.stderr).text();
      const out = watchLines(dev.stdout, /worker functions running/);
      try {
        await out.found;
      } catch (error) {
        stop(dev);
        await out.done;
        throw new Error(`sluice dev: ${error}\n${out.lines.join("\n")}\n${await stderr}`);
      }
      stop(dev);
      await out.done;
      assert.equal((await dev.status).code, 0, `${out.lines.join("\n")}\n${await stderr}`);
      return out.lines;
    };
    const port = freePort();
    const cold = await devUntilRunning(port);
    // The first line comes before the slow part, and says what that is.
    assert.match(cold[0], /DATABASE_URL is not set.*embedded database.*starting it/);
    assert.match(cold[1], /applying sluice's migrations/);
    assert.ok(
      cold.some((line) =>
        line.includes(`DATABASE_URL=postgres://postgres`) &&
        line.includes(`@127.0.0.1:${port}/postgres`)
      ),
      cold.join("\n"),
    );
    const snapshots = [...Deno.readDirSync(cache)].map((entry) => entry.name);
    assert.equal(snapshots.length, 1, snapshots.join(", "));
    const warm = await devUntilRunning(freePort());
    assert.match(
      warm[1],
      new RegExp(`loading the migrated embedded database from .*${snapshots[0]}`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
