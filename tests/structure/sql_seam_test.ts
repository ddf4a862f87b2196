// All SQL text lives in src/db/ (docs/architecture.md#layers): a tagged template (postgres.js's
// `sql`...``), a call of `.unsafe(` or a use of the inlining builder (src/db/inline_sql.ts)
// anywhere else under src/ is a statement outside the seam. Read from the syntax tree (Deno's
// lint plugin API), so an example in a comment does not count and a renamed tag (`tx`...``)
// does.
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const SRC = new URL("src/", ROOT);

/**
 * Files outside src/db/ that may run SQL text, and why. Each entry is a file, never a folder, so
 * a new file elsewhere is held to the rule.
 */
const ALLOWED: Readonly<Record<string, string>> = {
  // The migration runner: it applies the migration files and the PGMQ compat layer, whose text
  // is the schema itself (many statements per file: `.unsafe`, the simple protocol), and keeps
  // its ledger, which must exist before the first migration creates schema `sluice`; the
  // re-check of a file under the lock, its application and its ledger row are one transaction.
  "src/migrations/migrate.ts": "the migration runner",
  "src/migrations/install_pgmq.ts": "the migration runner (the PGMQ layer it installs first)",
  "src/migrations/_lock.ts": "the migration runner (its advisory lock)",
};

/** Tags of tagged templates that are not SQL (`markup`: the dashboard's escaping HTML template). */
const NOT_SQL_TAGS = new Set(["String.raw", "markup"]);

/** Names of the inlining builder's exports (src/db/inline_sql.ts). */
const BUILDER_MODULE = /\/db\/inline_sql\.ts$/;

interface Finding {
  readonly file: string;
  readonly line: number;
  readonly what: string;
}

/** The SQL uses in one file's source. */
function sqlUses(file: string, source: string): Finding[] {
  const found: Finding[] = [];
  const lineOf = (offset: number) => source.slice(0, offset).split("\n").length;
  const plugin: Deno.lint.Plugin = {
    name: "sql-seam",
    rules: {
      "sql-outside-db": {
        create(context) {
          const text = (node: Deno.lint.Node) => context.sourceCode.getText(node);
          return {
            TaggedTemplateExpression(node) {
              const tag = text(node.tag);
              if (NOT_SQL_TAGS.has(tag)) return;
              found.push({ file, line: lineOf(node.range[0]), what: `${tag}\`...\`` });
            },
            CallExpression(node) {
              const callee = node.callee;
              if (
                callee.type === "MemberExpression" && callee.property.type === "Identifier" &&
                callee.property.name === "unsafe"
              ) {
                found.push({ file, line: lineOf(node.range[0]), what: `${text(callee)}(...)` });
              }
              if (callee.type === "Identifier" && /Literal$/.test(callee.name)) {
                found.push({ file, line: lineOf(node.range[0]), what: `${callee.name}(...)` });
              }
            },
            ImportDeclaration(node) {
              if (BUILDER_MODULE.test(node.source.value)) {
                found.push({
                  file,
                  line: lineOf(node.range[0]),
                  what: `import ${node.source.value}`,
                });
              }
            },
          };
        },
      },
    },
  };
  Deno.lint.runPlugin(plugin, file, source);
  return found;
}

async function sourceFiles(dir: URL): Promise<URL[]> {
  const files: URL[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const next = new URL(entry.isDirectory ? `${entry.name}/` : entry.name, dir);
    if (entry.isDirectory) files.push(...await sourceFiles(next));
    else if (entry.name.endsWith(".ts")) files.push(next);
  }
  return files;
}

/** Every SQL use under src/ outside src/db/ and the allowed files, as `file:line what`. */
export async function sqlOutsideDb(): Promise<string[]> {
  const offenders: string[] = [];
  for (const url of await sourceFiles(SRC)) {
    const file = url.href.slice(ROOT.href.length);
    if (file.startsWith("src/db/") || file in ALLOWED) continue;
    for (const use of sqlUses(file, await Deno.readTextFile(url))) {
      offenders.push(`${use.file}:${use.line} ${use.what}`);
    }
  }
  return offenders.sort();
}

Deno.test("no SQL text under src/ outside src/db/ (and the migration runner)", async () => {
  const offenders = await sqlOutsideDb();
  assert.deepEqual(
    offenders,
    [],
    `move these statements into a src/db/ query module:\n${offenders.join("\n")}`,
  );
});

Deno.test("the SQL finder sees tagged templates, .unsafe, literal helpers and the builder", () => {
  const source = [
    "/** sql`select 1` in a comment is not a statement */",
    'import { inline } from "../db/inline_sql.ts";',
    "const a = await sql<{ n: number }[]>`select 1 as n`;",
    "const b = await tx`select 2`;",
    "await sql.unsafe('select 3');",
    "const c = textLiteral('x');",
    "const d = String.raw`not sql`;",
    "const e = `plain ${a} template`;",
  ].join("\n");
  assert.deepEqual(sqlUses("probe.ts", source).map((use) => `${use.line} ${use.what}`), [
    "2 import ../db/inline_sql.ts",
    "3 sql`...`",
    "4 tx`...`",
    "5 sql.unsafe(...)",
    "6 textLiteral(...)",
  ]);
});

Deno.test("every allowed file exists and still runs SQL (a stale entry is removed)", async () => {
  for (const file of Object.keys(ALLOWED)) {
    const uses = sqlUses(file, await Deno.readTextFile(new URL(file, ROOT)));
    assert.ok(uses.length > 0, `${file} runs no SQL any more: remove it from ALLOWED`);
  }
});
