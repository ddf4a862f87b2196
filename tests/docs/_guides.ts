// The guides' shell commands, and a temporary user project to run them in: a directory with no
// sluice checkout, where docs/getting_started.md's install command ran as written against the
// JSR-shaped loopback registry of exactly the files `deno publish` uploads (tests/cli/_registry.ts,
// selected with JSR_URL for every command), so its deno.json maps @sluice/sluice to
// jsr:@sluice/sluice@<version> and has install's `sluice` task. Each command runs as written,
// through bash, in that directory.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import type { JsrServer } from "../../dev/jsr_server.ts";
import { lineReader, waitUntil } from "../_support.ts";
import { documentedInstall } from "../cli/_registry.ts";

const ROOT = new URL("../../", import.meta.url);

/** The local Supabase database the guides name; the tests' own database stands in for it. */
export const LOCAL_SUPABASE_DB = "postgres://postgres:postgres@127.0.0.1:54322/postgres";

/** Every guide: README.md and the Markdown files of docs/, relative to the repository root. */
export function guideFiles(): string[] {
  const files = ["README.md"];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(new URL(dir, ROOT))) {
      if (entry.isDirectory) walk(`${dir}${entry.name}/`);
      else if (entry.name.endsWith(".md")) files.push(`${dir}${entry.name}`);
    }
  };
  walk("docs/");
  return files.sort();
}

/** The fenced code blocks of a Markdown text, with their info string. */
export function codeBlocks(markdown: string): { lang: string; body: string }[] {
  return [...markdown.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```$/gm)]
    .map((match) => ({ lang: match[1], body: match[2] }));
}

/** The commands of an `sh` block: `\` continuations joined, blank and comment lines dropped. */
export function shellCommands(body: string): string[] {
  return body.replace(/\\\n\s*/g, "").split("\n").map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** Every shell command of a guide, in document order. */
export function guideCommands(path: string): string[] {
  return codeBlocks(Deno.readTextFileSync(new URL(path, ROOT)))
    .filter((block) => block.lang === "sh").flatMap((block) => shellCommands(block.body));
}

/** A temporary user project whose commands run through bash. */
export class UserProjectShell implements AsyncDisposable {
  readonly env: Record<string, string>;
  readonly #children: Deno.ChildProcess[] = [];

  private constructor(readonly dir: string, env: Record<string, string>) {
    this.env = env;
  }

  /**
   * A new project: `supabase/functions/`, then sluice installed from `registry` with the
   * documented command (its deno.json, `sluice` task and migrations).
   */
  static async create(
    registry: JsrServer,
    env: Record<string, string>,
  ): Promise<UserProjectShell> {
    const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "sluice-guide-project-" }));
    await Deno.mkdir(join(dir, "supabase/functions/_shared"), { recursive: true });
    const base: Record<string, string> = {
      HOME: Deno.env.get("HOME") ?? "/",
      // `deno` on PATH is the one running the tests.
      PATH: `${dirname(Deno.execPath())}:${Deno.env.get("PATH") ?? ""}`,
      JSR_URL: registry.url,
      NO_COLOR: "1",
    };
    for (const name of ["DENO_DIR", "DENO_TLS_CA_STORE"]) {
      const value = Deno.env.get(name);
      if (value !== undefined) base[name] = value;
    }
    const project = new UserProjectShell(dir, { ...base, ...env });
    try {
      await project.run(await documentedInstall(registry));
    } catch (error) {
      await project[Symbol.asyncDispose]();
      throw error;
    }
    return project;
  }

  #command(line: string, longRunning: boolean): Deno.Command {
    return new Deno.Command("bash", {
      args: ["-c", line],
      cwd: this.dir,
      env: this.env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      // A hung command fails the test with its output instead of hanging it.
      signal: longRunning ? undefined : AbortSignal.timeout(120_000),
    });
  }

  /** Runs one command to its end; it must exit 0. Returns stdout and stderr. */
  async run(line: string): Promise<string> {
    const { code, stdout, stderr } = await this.#command(line, false).output();
    const out = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
    assert.equal(code, 0, `\`${line}\` in the user project exited ${code}:\n${out}`);
    return out;
  }

  /**
   * Starts a long-running command (`exec env`, so that a signal reaches it; `env` takes the
   * `NAME=value` prefixes) and waits until a line of
   * its output matches `ready` (or `ready()` answers truthy); returns the process and its output
   * (still collected).
   */
  async spawn(
    line: string,
    ready: RegExp | (() => Promise<unknown>),
  ): Promise<{ child: Deno.ChildProcess; lines: string[]; done: Promise<void> }> {
    const child = this.#command(`exec env ${line}`, true).spawn();
    this.#children.push(child);
    const lines: string[] = [];
    const drain = async (stream: ReadableStream<Uint8Array>) => {
      const reader = lineReader(stream);
      for (let next = await reader.next(); next !== null; next = await reader.next()) {
        lines.push(next);
      }
    };
    const done = Promise.all([drain(child.stdout), drain(child.stderr)]).then(() => {});
    let exited = false;
    child.status.then(() => exited = true);
    await waitUntil(
      async () => {
        if (exited) assert.fail(`\`${line}\` ended before it was ready:\n${lines.join("\n")}`);
        const isReady = ready instanceof RegExp
          ? lines.some((text) => ready.test(text))
          : await ready().catch(() => false);
        return isReady ? true : null;
      },
      `\`${line}\` to be ready`,
      60_000,
    );
    return { child, lines, done };
  }

  /** Stops a spawned command with `signal` and returns its exit code. */
  async stop(child: Deno.ChildProcess, signal: Deno.Signal = "SIGTERM"): Promise<number> {
    try {
      child.kill(signal);
    } catch {
      // Already exited.
    }
    return (await child.status).code;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const child of this.#children) await this.stop(child, "SIGKILL");
    await Deno.remove(this.dir, { recursive: true });
  }
}
