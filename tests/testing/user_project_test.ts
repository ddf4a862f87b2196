// docs/testing.md's test file, run with `deno test` in a temporary user project that loads sluice
// as the published package (jsr: specifiers, from the JSR-shaped loopback registry of the files
// `deno publish` would upload, selected with JSR_URL), with no DATABASE_URL: the testing kit's
// embedded database and test clock, as a user gets them. docs/waits.md's flows and their test file
// run the same way (its sendSignal snippet is type-checked there), and docs/subflows.md's (its
// watchRun snippet type-checked) and docs/flow_control.md's.
import assert from "node:assert/strict";
import { join } from "node:path";
import { serveRegistry } from "../cli/_registry.ts";

const ROOT = new URL("../../", import.meta.url);

/** A temporary user project holding `files`, with sluice mapped as install maps it. */
interface UserProject extends AsyncDisposable {
  /** Runs `deno <args>` in it, without DATABASE_URL; fails the test on a non-zero exit. */
  deno(args: string[]): Promise<string>;
}

async function userProject(files: Record<string, string>): Promise<UserProject> {
  const registry = await serveRegistry();
  const dir = await Deno.makeTempDir({ prefix: "sluice-user-testing-" });
  // As install maps it; `@sluice/sluice/testing` resolves through the same entry.
  const imports = { [registry.name]: `jsr:${registry.name}@${registry.version}` };
  await Deno.writeTextFile(join(dir, "deno.json"), JSON.stringify({ imports }, null, 2));
  for (const [name, code] of Object.entries(files)) await Deno.writeTextFile(join(dir, name), code);
  const env: Record<string, string> = {
    ...Deno.env.toObject(),
    JSR_URL: registry.url,
    NO_COLOR: "1",
  };
  delete env.DATABASE_URL;
  return {
    async deno(args) {
      const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
        args,
        cwd: dir,
        env,
        clearEnv: true,
        stdin: "null",
      }).output();
      const out = new TextDecoder().decode(stdout);
      const err = new TextDecoder().decode(stderr);
      assert.equal(
        code,
        0,
        `deno ${args.join(" ")} exited ${code}\nstdout:\n${out}\nstderr:\n${err}`,
      );
      return out;
    },
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
      await registry[Symbol.asyncDispose]();
    },
  };
}

const CONFIG = ["--no-lock", "--config", "deno.json"];

/**
 * Checks a child `deno test` run by its summary line and names, not by a progress line: a slow
 * test gets a "has been running for over" note between its name and its `ok`.
 */
function assertSummary(out: string, passed: number, names: string[]): void {
  const summary = out.match(
    /^(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed/m,
  );
  assert.ok(summary, `no test summary in:\n${out}`);
  assert.deepEqual([Number(summary[1]), Number(summary[3])], [passed, 0], out);
  for (const name of names) assert.ok(out.includes(name), `no test named ${name} in:\n${out}`);
}

Deno.test("docs/testing.md's test file passes in a user project on the embedded database", async () => {
  const doc = await Deno.readTextFile(new URL("docs/testing.md", ROOT));
  const code = doc.match(/```ts\n([\s\S]*?)```/)?.[1];
  assert.ok(code, "docs/testing.md has no ts block");
  await using project = await userProject({ "prices_test.ts": code });
  const out = await project.deno(["test", "-A", ...CONFIG, "prices_test.ts"]);
  assertSummary(out, 1, ["prices retries the rate lookup and prices every sku"]);
});

Deno.test("docs/waits.md's flows and test file pass in a user project on the embedded database", async () => {
  // A plain match, not tests/docs/_guides.ts: this file runs on the embedded database too, where
  // nothing may import tests/_support.ts.
  const blocks = [
    ...(await Deno.readTextFile(new URL("docs/waits.md", ROOT))).matchAll(
      /^```ts\n([\s\S]*?)^```$/gm,
    ),
  ].map((match) => match[1]);
  const pick = (what: string, found: string | undefined) => {
    assert.ok(found, `docs/waits.md has no ts block ${what}`);
    return found;
  };
  const files = {
    "refunds.ts": pick("exporting refunds", blocks.find((b) => b.includes("export const refunds"))),
    "reminders.ts": pick(
      "exporting reminders",
      blocks.find((b) => b.includes("export const reminders")),
    ),
    "send_signal.ts": pick(
      "calling sendSignal(sql",
      blocks.find((b) => b.includes("sendSignal(sql") && !b.includes("Deno.test")),
    ),
    "waits_test.ts": pick("with Deno.test", blocks.find((b) => b.includes("Deno.test"))),
  };
  assert.equal(blocks.length, Object.keys(files).length, "every ts block of docs/waits.md runs");
  await using project = await userProject(files);
  await project.deno(["check", ...CONFIG, "send_signal.ts"]);
  const out = await project.deno(["test", "-A", ...CONFIG, "waits_test.ts"]);
  assert.match(
    out,
    /a refund waits for a decision; without one it is declined after 48 hours \.\.\. ok/,
  );
  assertSummary(out, 2, ["the reminder goes out after three days, at once in a test"]);
});

Deno.test("docs/subflows.md's flows and test file pass in a user project on the embedded database", async () => {
  const blocks = [
    ...(await Deno.readTextFile(new URL("docs/subflows.md", ROOT))).matchAll(
      /^```ts\n([\s\S]*?)^```$/gm,
    ),
  ].map((match) => match[1]);
  const pick = (what: string, found: string | undefined) => {
    assert.ok(found, `docs/subflows.md has no ts block ${what}`);
    return found;
  };
  const files = {
    "onboard.ts": pick("exporting onboard", blocks.find((b) => b.includes("export const onboard"))),
    "onboard_test.ts": pick("with Deno.test", blocks.find((b) => b.includes("Deno.test"))),
    "watch_onboard.ts": pick(
      "calling watchRun(sql",
      blocks.find((b) => b.includes("watchRun(sql")),
    ),
  };
  assert.equal(blocks.length, Object.keys(files).length, "every ts block of docs/subflows.md runs");
  await using project = await userProject(files);
  // The watch needs a database of its own: its events' types are what it shows.
  await project.deno(["check", ...CONFIG, "watch_onboard.ts"]);
  const out = await project.deno(["test", "-A", ...CONFIG, "onboard_test.ts"]);
  assertSummary(out, 1, [
    "onboarding provisions the account and invites every seat, each in a child run",
  ]);
});

Deno.test("docs/flow_control.md's concurrency and rate limits, idempotent starts, debounced starts and priorities and their tests pass in a user project on the embedded database", async () => {
  const blocks = [
    ...(await Deno.readTextFile(new URL("docs/flow_control.md", ROOT))).matchAll(
      /^```ts\n([\s\S]*?)^```$/gm,
    ),
  ].map((match) => match[1]);
  const pick = (what: string, found: string | undefined) => {
    assert.ok(found, `docs/flow_control.md has no ts block ${what}`);
    return found;
  };
  const files = {
    "search.ts": pick("exporting search", blocks.find((b) => b.includes("export const search"))),
    "search_test.ts": pick(
      "testing search",
      blocks.find((b) => b.includes("Deno.test") && b.includes("./search.ts")),
    ),
    "sync.ts": pick("exporting syncCustomer", blocks.find((b) => b.includes("export const sync"))),
    "sync_test.ts": pick(
      "testing syncCustomer",
      blocks.find((b) => b.includes("Deno.test") && b.includes("./sync.ts")),
    ),
    "orders.ts": pick(
      "exporting onOrderPaid",
      blocks.find((b) => b.includes("export function onOrderPaid")),
    ),
    "orders_test.ts": pick(
      "testing onOrderPaid",
      blocks.find((b) => b.includes("Deno.test") && b.includes("./orders.ts")),
    ),
    "documents.ts": pick(
      "exporting onDocumentSaved",
      blocks.find((b) => b.includes("export function onDocumentSaved")),
    ),
    "documents_test.ts": pick(
      "testing onDocumentSaved",
      blocks.find((b) => b.includes("Deno.test") && b.includes("./documents.ts")),
    ),
    "tickets.ts": pick(
      "exporting onTicket",
      blocks.find((b) => b.includes("export function onTicket")),
    ),
    "tickets_test.ts": pick(
      "testing onTicket",
      blocks.find((b) => b.includes("Deno.test") && b.includes("./tickets.ts")),
    ),
  };
  assert.equal(
    blocks.length,
    Object.keys(files).length,
    "every ts block of docs/flow_control.md runs",
  );
  await using project = await userProject(files);
  const out = await project.deno([
    "test",
    "-A",
    ...CONFIG,
    "orders_test.ts",
    "documents_test.ts",
    "tickets_test.ts",
    "sync_test.ts",
    "search_test.ts",
  ]);
  assertSummary(out, 5, [
    "a redelivered event starts no second run",
    "a burst of saves indexes the document once, with the last text",
    "a pro ticket is triaged before the free-plan backlog",
    "a rate-limited key sends one search at a time and holds the rest",
    "a customer's third sync waits for a slot, another customer's does not",
  ]);
});
