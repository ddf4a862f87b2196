import assert from "node:assert/strict";
import { frozenCommits, git, ROOT } from "../release/_releases.ts";
import {
  argumentTypes,
  blankOutLiterals,
  type GroupedMigration,
  redefinitionsWithinGroups,
  sqlStatements,
} from "./_sql_definitions.ts";

// Each SQL function, procedure, view and trigger has one definition per frozen group of
// supabase/migrations/: the files a release (releases.json) or a pre-release freeze
// (tests/release/_releases.ts) first shipped; SLUICE_RELEASE_FROM names one revision to treat as a
// release instead. A migration of a later group may redefine or drop what an earlier group shipped,
// which is how a fix lands. Files not frozen yet are written one per change (`deno task
// sql:migration`), so a routine may be redefined among them: its readable live text is its file
// under supabase/schemas/ (tests/structure/sql_sources_test.ts).

const MIGRATIONS = "supabase/migrations/";

/** The migration files with their text and release group, in apply order. */
async function groupedMigrations(): Promise<GroupedMigration[]> {
  const firstShipped = new Map<string, string>();
  for (const { label, commit } of await frozenCommits()) {
    let listing: string;
    try {
      listing = await git("ls-tree", "--name-only", `${commit}:${MIGRATIONS}`);
    } catch (error) {
      throw new Error(
        `Cannot group the migrations by release: release ${label} names commit ${commit}, whose ` +
          `${MIGRATIONS} this checkout cannot list (a shallow clone? fetch the full history)`,
        { cause: error },
      );
    }
    for (const file of listing.split("\n").filter((name) => name.endsWith(".sql"))) {
      if (!firstShipped.has(file)) firstShipped.set(file, label);
    }
  }
  const files: string[] = [];
  for await (const entry of Deno.readDir(new URL(MIGRATIONS, ROOT))) {
    if (entry.isFile && entry.name.endsWith(".sql")) files.push(entry.name);
  }
  files.sort((a, b) => a < b ? -1 : a > b ? 1 : 0);
  return await Promise.all(files.map(async (file) => ({
    file,
    text: await Deno.readTextFile(new URL(MIGRATIONS + file, ROOT)),
    group: firstShipped.get(file) ?? "unreleased",
  })));
}

Deno.test("no SQL function, procedure, view or trigger is defined twice within one frozen group of the migrations", async () => {
  const migrations = await groupedMigrations();
  // The parser finds every routine a plain reading finds (one per line starting with
  // "create [or replace] function|procedure"): an empty result would prove nothing.
  const plain =
    migrations.flatMap(({ text }) =>
      text.match(/^create\s+(or\s+replace\s+)?(function|procedure)\s/gim) ?? []
    ).length;
  const parsed =
    migrations.flatMap(({ text }) =>
      sqlStatements(text).filter((s) =>
        s.action === "create" && (s.kind === "function" || s.kind === "procedure")
      )
    ).length;
  assert.ok(plain > 0, `no routine found in ${MIGRATIONS}`);
  assert.equal(parsed, plain, "the parser and a plain reading disagree on the routines defined");
  const problems = redefinitionsWithinGroups(
    migrations.filter(({ group }) => group !== "unreleased"),
  );
  assert.deepEqual(
    problems,
    [],
    "Within a frozen group every SQL object has one definition (docs/architecture.md#migrations):" +
      `\n  ${problems.join("\n  ")}`,
  );
});

Deno.test("the migration parser ignores comments, string literals and dollar-quoted bodies", () => {
  const sql = `
-- create function sluice.in_a_comment(text)
/* create function sluice.in_a_block(text) /* nested */ create view sluice.still_comment */
create function sluice.outer(a text)
returns void language plpgsql as $body$
begin
  execute 'create function sluice.in_a_string(int)';
  execute $$create or replace function sluice.in_dollars(int) returns int$$;
end;
$body$;
select E'it\\'s create function sluice.escaped(int)', 'create view sluice.quoted_view as';
create view "Sluice"."Odd ""View""" as select 1 as "-- not a comment";
create trigger t_a before update or delete on sluice.tab for each row execute function sluice.outer();
drop function if exists sluice.gone(text), sluice.gone_too;
drop trigger t_b on sluice.tab;
`;
  assert.deepEqual(
    sqlStatements(sql).map(({ action, key, line }) => `${line} ${action} ${key}`),
    [
      "4 create function sluice.outer(text)",
      '12 create view Sluice.Odd "View"',
      "13 create trigger t_a on sluice.tab",
      "14 drop function sluice.gone(text)",
      "14 drop function sluice.gone_too",
      "15 drop trigger t_b on sluice.tab",
    ],
  );
  // Blanking keeps every offset, so line numbers are the original's.
  assert.equal(blankOutLiterals(sql).length, sql.length);
});

Deno.test("a routine's identity is its schema, name and input types, however written", () => {
  const key = (sql: string) => sqlStatements(sql).map((s) => s.key);
  assert.deepEqual(
    key(`create function sluice.f(queue_names text[], n int4 default 1, at timestamptz = now())`),
    key(`CREATE OR REPLACE FUNCTION Sluice.F(_text, integer, timestamp with time zone)`),
  );
  assert.deepEqual(key(`create function sluice.f(text[], integer, timestamptz)`), [
    "function sluice.f(text[], integer, timestamp with time zone)",
  ]);
  assert.deepEqual(
    argumentTypes(
      "x double precision, double precision, r sluice.runs, out total bigint",
      "function",
    ),
    ["double precision", "double precision", "sluice.runs"],
  );
  assert.deepEqual(argumentTypes("in a integer, inout result jsonb default null", "procedure"), [
    "integer",
    "jsonb",
  ]);
  // Overloads are different functions.
  assert.notDeepEqual(
    key(`create function sluice.archive_messages(queue_names text[], message_ids bigint[])`),
    key(`create function sluice.archive_messages(queue_name text, message_ids bigint[])`),
  );
});

Deno.test("a redefinition within a release group is reported; one in a later group is allowed", () => {
  const body = "returns void language sql as $$ select 1 $$;\n";
  const migration = (file: string, group: string, text: string) => ({ file, group, text });
  const released = migration("001_a.sql", "0.1.0", `create function sluice.f(a text) ${body}`);
  // A fix after the release replaces the released function, then its own group keeps it single.
  assert.deepEqual(
    redefinitionsWithinGroups([
      released,
      migration("002_fix.sql", "unreleased", `create or replace function sluice.f(b text) ${body}`),
    ]),
    [],
  );
  assert.deepEqual(
    redefinitionsWithinGroups([
      released,
      migration("002_fix.sql", "unreleased", `create or replace function sluice.f(b text) ${body}`),
      migration(
        "003_again.sql",
        "unreleased",
        `\n\ncreate or replace function sluice.f(text) ${body}`,
      ),
    ]),
    [
      "function sluice.f(text) is defined in 002_fix.sql:1 and again in 003_again.sql:3 (both " +
      "unreleased): keep one body, in the earlier file",
    ],
  );
  assert.deepEqual(
    redefinitionsWithinGroups([
      migration("001_a.sql", "0.1.0", `create function sluice.f(a text) ${body}`),
      migration("002_b.sql", "0.1.0", `create or replace function sluice.f(a text) ${body}`),
    ]),
    [
      "function sluice.f(text) is defined in 001_a.sql:1 and again in 002_b.sql:1 (both first " +
      "released in 0.1.0): keep one body, in the earlier file",
    ],
  );
  // Dropping and creating again with another signature is a redefinition too.
  assert.deepEqual(
    redefinitionsWithinGroups([
      migration("001_a.sql", "unreleased", `create function sluice.f(a text) ${body}`),
      migration(
        "002_b.sql",
        "unreleased",
        `drop function sluice.f(text);\ncreate function sluice.f(a text, force boolean) ${body}`,
      ),
    ]),
    [
      "002_b.sql:1 drops function sluice.f(text), which 001_a.sql:1 defines (both unreleased): " +
      "change the definition in its file instead",
    ],
  );
  // Different overloads, views and triggers of different tables are different objects.
  assert.deepEqual(
    redefinitionsWithinGroups([
      migration(
        "001_a.sql",
        "unreleased",
        `create function sluice.f(a text) ${body}
create view sluice.v as select 1;
create trigger t after insert on sluice.a for each row execute function sluice.g();`,
      ),
      migration(
        "002_b.sql",
        "unreleased",
        `create function sluice.f(a text[]) ${body}
create trigger t after insert on sluice.b for each row execute function sluice.g();`,
      ),
    ]),
    [],
  );
  assert.deepEqual(
    redefinitionsWithinGroups([
      migration("001_a.sql", "unreleased", "create view sluice.v as select 1;"),
      migration("002_b.sql", "unreleased", "create or replace view sluice.v as select 1, 2;"),
    ]),
    [
      "view sluice.v is defined in 001_a.sql:1 and again in 002_b.sql:1 (both unreleased): keep " +
      "one body, in the earlier file",
    ],
  );
});
