// The one command registry of `sluice` (src/cli/registry.ts): the help it generates lists every
// command, each command's `--help` describes it, a name that matches no command is one line that
// suggests the closest, and docs/ops.md lists the same operations commands.
import assert from "node:assert/strict";
import { main } from "../../src/cli/main.ts";
import { COMMANDS, SECTIONS } from "../../src/cli/registry.ts";

/** Runs `sluice <args>` in-process; no database is needed for help and usage errors. */
async function sluice(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    databaseUrl: "postgres://unused",
    io: { out: (line) => out.push(line), err: (line) => err.push(line) },
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

Deno.test("sluice --help lists every command under its heading, dashboard and the project commands included", async () => {
  const { code, out } = await sluice("--help");
  assert.equal(code, 0);
  for (const name of ["install", "migrate", "functions generate", "dev", "flows reset"]) {
    assert.match(out, new RegExp(`^  ${name} +\\S`, "m"), name);
  }
  for (const command of COMMANDS) {
    assert.match(out, new RegExp(`^  ${command.name} +${RegExp.escape(command.summary)}$`, "m"));
  }
  assert.match(out, /^Project:\n {2}install /m);
  assert.match(out, /^ {2}dashboard +serve the web dashboard/m);
  const none = await sluice();
  assert.equal(none.code, 2, "no command is bad usage");
  assert.equal(none.err, out, "the same help, on stderr");
});

Deno.test("sluice ops --help lists only the commands that work on the database", async () => {
  const { code, out } = await sluice("ops", "--help");
  assert.equal(code, 0);
  assert.match(out, /^Usage: sluice ops <command>/);
  assert.match(out, /^ {2}coverage /m);
  assert.match(out, /^ {2}flows reset /m);
  for (const name of ["install", "migrate", "functions generate", "dev"]) {
    assert.doesNotMatch(out, new RegExp(`^  ${name} `, "m"), name);
  }
  const local = await sluice("ops", "install");
  assert.equal(local.code, 2);
  assert.match(local.err, /^Cannot run sluice ops "install": no such command/);
});

Deno.test("every command's --help is its usage line, description and options", async () => {
  for (const command of COMMANDS) {
    const { code, out } = await sluice(...command.name.split(" "), "--help");
    assert.equal(code, 0, command.name);
    assert.ok(out.startsWith(`Usage: sluice ${command.name}`), out);
    assert.ok(out.includes(command.description), command.name);
    for (const option of command.options ?? []) {
      assert.match(out, new RegExp(`^  --${option.name}`, "m"), `${command.name} --${option.name}`);
    }
  }
  const dev = await sluice("dev", "-h");
  assert.match(dev.out, /^Usage: sluice dev \[--config FILE\] \[--port PORT\]$/m);
  const generate = await sluice("functions", "generate", "--help");
  assert.match(generate.out, /^Usage: sluice functions generate \[--check\] \[--config FILE\]$/m);
});

Deno.test("a name that matches no command is one line naming it and the closest command", async () => {
  const cases: [string[], string][] = [
    [["coverge"], 'Cannot run sluice "coverge": no such command; did you mean "coverage"?'],
    [
      ["fence", "drian"],
      'Cannot run sluice "fence drian": no such command; did you mean "fence drain"?',
    ],
    [
      ["dashbaord", "--port", "0"],
      'Cannot run sluice "dashbaord": no such command; ' +
      'did you mean "dashboard"?',
    ],
    [["instal"], 'Cannot run sluice "instal": no such command; did you mean "install"?'],
    [["xyzzy"], 'Cannot run sluice "xyzzy": no such command; `sluice --help` lists every command'],
    [
      ["aliases", "zap"],
      'Cannot run sluice "aliases zap": no such command; give one of aliases list, ' +
      "aliases activate, aliases history",
    ],
  ];
  for (const [args, line] of cases) {
    const { code, out, err } = await sluice(...args);
    assert.equal(code, 2, args.join(" "));
    assert.equal(err, line);
    assert.equal(out, "");
  }
});

Deno.test("a project command's bad usage exits 2 with its help", async () => {
  const install = await sluice("install", "extra");
  assert.equal(install.code, 2);
  assert.match(install.err, /^Cannot run install: expected no arguments, got "extra"\n\nUsage: /);
  const dev = await sluice("dev", "--config");
  assert.equal(dev.code, 2);
  assert.match(dev.err, /^Cannot run dev: option --config needs a value \(FILE\)/);
  const generate = await sluice("functions", "generate", "--bogus");
  assert.equal(generate.code, 2);
  assert.match(generate.err, /^Cannot run functions generate: unknown option "--bogus"/);
});

/** The command names of docs/ops.md's table: `fence record\|disable` stands for two. */
async function documentedOpsCommands(): Promise<string[]> {
  const text = await Deno.readTextFile(new URL("../../docs/ops.md", import.meta.url));
  const table = text.slice(text.indexOf("| command "), text.indexOf("\nExit codes:"));
  return table.split("\n").flatMap((row) => {
    const cell = /^\| `([^`]+)`/.exec(row)?.[1];
    if (cell === undefined) return [];
    // The name is the leading lower-case words; arguments and options follow.
    const words = cell.split(" ");
    const end = words.findIndex((word) => !/^[a-z][a-z\\|-]*$/.test(word));
    const [group, verbs] = words.slice(0, end === -1 ? words.length : end);
    return verbs === undefined ? [group] : verbs.split("\\|").map((verb) => `${group} ${verb}`);
  });
}

Deno.test("docs/ops.md's command table lists exactly the operations commands of --help", async () => {
  const operations = SECTIONS.find((section) => section.title.startsWith("Operations"));
  assert.ok(operations);
  assert.deepEqual(
    (await documentedOpsCommands()).sort(),
    operations.commands.map((command) => command.name).sort(),
  );
});
