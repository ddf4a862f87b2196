/**
 * The readable SQL sources under `supabase/schemas/` (one file per routine name, table and view,
 * in the shape of Supabase's declarative schemas), built from what the migrations create: the
 * `pg_dump` of schema `sluice` split by object, each routine headed by the comment that precedes
 * its live definition in the migration that last defines it. `deno task schema:dump` writes them
 * and the routine index of docs/sql.md; `--check` compares; `deno task sql:migration NAME` turns edited sources
 * into the next migration (scripts/sql_migration.ts).
 *
 * @module
 */

import { argumentTypes, sqlStatements } from "../tests/structure/_sql_definitions.ts";

/** The directory of the sources, relative to the repository root. */
export const SOURCES_DIRECTORY = "supabase/schemas/";

/** One section of `pg_dump` output: its `-- Name: …; Type: …` header and its statements. */
export interface DumpSection {
  /** The name as pg_dump writes it: `runs`, `runs runs_pkey`, `fail_task(uuid, text)`. */
  readonly name: string;
  /** `TABLE`, `FUNCTION`, `INDEX`, `FK CONSTRAINT`, … */
  readonly type: string;
  /** The statements, without the header. */
  readonly body: string;
}

/** A migration file's name and text, in apply order. */
export interface MigrationText {
  readonly file: string;
  readonly text: string;
}

/** Splits `pg_dump` output into its sections, in dump order. */
export function dumpSections(dump: string): DumpSection[] {
  const sections: DumpSection[] = [];
  const header = /^--\n-- Name: (.+?); Type: ([A-Z ]+); Schema: [^;]*; Owner: .*\n--\n/gm;
  const matches = [...dump.matchAll(header)];
  for (const [index, match] of matches.entries()) {
    const start = match.index + match[0].length;
    const end = index + 1 < matches.length ? matches[index + 1].index : dump.length;
    sections.push({ name: match[1], type: match[2], body: dump.slice(start, end).trim() });
  }
  return sections;
}

/** Where a section belongs: its source file under {@linkcode SOURCES_DIRECTORY}, or none. */
export function sourceFileOf(section: DumpSection): string | null {
  const first = section.name.split(" ")[0];
  switch (section.type) {
    case "FUNCTION":
    case "PROCEDURE":
      return `functions/${section.name.slice(0, section.name.indexOf("("))}.sql`;
    case "TABLE":
    case "SEQUENCE":
      return `tables/${sequenceTable(section) ?? first}.sql`;
    case "VIEW":
      return `views/${first}.sql`;
    case "CONSTRAINT":
    case "FK CONSTRAINT":
    case "TRIGGER":
    case "DEFAULT":
    case "POLICY":
    case "ROW SECURITY":
      return `tables/${first}.sql`;
    case "INDEX": {
      const on = /\bON (?:ONLY )?sluice\.(\w+)/.exec(section.body);
      return on === null ? null : `tables/${on[1]}.sql`;
    }
    case "COMMENT": {
      const target = /^(TABLE|VIEW|COLUMN|FUNCTION|PROCEDURE) ([\w]+)/.exec(section.name);
      if (target === null) return null;
      if (target[1] === "FUNCTION" || target[1] === "PROCEDURE") {
        return `functions/${target[2]}.sql`;
      }
      return `${target[1] === "VIEW" ? "views" : "tables"}/${target[2]}.sql`;
    }
    default:
      return null;
  }
}

/** The table a sequence is owned by (`ALTER SEQUENCE … OWNED BY sluice.t.c`), if any. */
function sequenceTable(section: DumpSection): string | null {
  if (section.type !== "SEQUENCE") return null;
  return /OWNED BY sluice\.(\w+)\./.exec(section.body)?.[1] ?? null;
}

/**
 * The comment block right above the last definition of each routine in the migrations, keyed
 * like {@linkcode routineKey}, with the file that holds that definition.
 */
export function routineHeaders(
  migrations: readonly MigrationText[],
): Map<string, { file: string; comment: string }> {
  const headers = new Map<string, { file: string; comment: string }>();
  for (const { file, text } of migrations) {
    const lines = text.split("\n");
    for (const statement of sqlStatements(text)) {
      if (statement.action !== "create") continue;
      if (statement.kind !== "function" && statement.kind !== "procedure") continue;
      const comment: string[] = [];
      for (let line = statement.line - 2; line >= 0 && /^\s*--/.test(lines[line]); line--) {
        comment.unshift(lines[line].trimStart());
      }
      headers.set(statement.key, { file, comment: comment.join("\n") });
    }
  }
  return headers;
}

/** The key of a routine section, as {@linkcode routineHeaders} keys them. */
export function routineKey(section: DumpSection): string {
  const open = section.name.indexOf("(");
  const kind = section.type === "PROCEDURE" ? "procedure" : "function";
  const args = argumentTypes(section.name.slice(open + 1, -1), kind);
  return `${kind} sluice.${section.name.slice(0, open)}(${args.join(", ")})`;
}

/** A routine section as a source: `CREATE OR REPLACE`, so the file can be applied as it is. */
function replaceable(section: DumpSection): string {
  return section.body.replace(/^CREATE (FUNCTION|PROCEDURE) /, "CREATE OR REPLACE $1 ");
}

/**
 * The source files of a dump: file path (under {@linkcode SOURCES_DIRECTORY}) to content, plus
 * the routine index for docs/sql.md.
 */
export function sourceFiles(
  dump: string,
  migrations: readonly MigrationText[],
): { files: Map<string, string>; index: string } {
  const headers = routineHeaders(migrations);
  const parts = new Map<string, string[]>();
  const defined = new Map<string, Set<string>>();
  const names = new Map<string, string>();
  for (const section of dumpSections(dump)) {
    const file = sourceFileOf(section);
    if (file === null) continue;
    const routine = section.type === "FUNCTION" || section.type === "PROCEDURE";
    let text = routine ? replaceable(section) : section.body;
    if (routine) {
      const header = headers.get(routineKey(section));
      if (header !== undefined) {
        defined.set(file, (defined.get(file) ?? new Set()).add(header.file));
        if (header.comment !== "") text = `${header.comment}\n${text}`;
      }
      names.set(file, section.name.slice(0, section.name.indexOf("(")));
    }
    parts.set(file, [...(parts.get(file) ?? []), text]);
  }
  const files = new Map<string, string>();
  for (const [file, texts] of [...parts].sort(([a], [b]) => a < b ? -1 : 1)) {
    const from = [...(defined.get(file) ?? [])].sort();
    const object = `sluice.${file.replace(/^\w+\//, "").replace(/\.sql$/, "")}`;
    const routine = file.startsWith("functions/");
    const origin = from.length === 0
      ? ""
      : ` (last defined in supabase/migrations/${from.join(", ")})`;
    const how = routine
      ? "-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md)."
      : "-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).";
    files.set(
      file,
      [`-- ${object}, as the migrations create it${origin}.`, how, "", texts.join("\n\n"), ""]
        .join("\n"),
    );
  }
  const rows = [...names].sort(([, a], [, b]) => a < b ? -1 : 1).map(([file, name]) =>
    `| \`sluice.${name}\` | [${file}](../${SOURCES_DIRECTORY}${file}) | ${
      [...(defined.get(file) ?? [])].sort().map((m) => `\`${m}\``).join(", ")
    } |`
  );
  const index = [
    "| routine | source | live definition in |",
    "| --- | --- | --- |",
    ...rows,
  ].join("\n");
  return { files, index };
}

/** The markers around the generated routine index in docs/sql.md. */
export const INDEX_MARKERS = {
  start: "<!-- routine index: generated by `deno task schema:dump` -->",
  end: "<!-- end of routine index -->",
} as const;

/** `doc` with the text between {@linkcode INDEX_MARKERS} replaced by `index`. */
export function withIndex(doc: string, index: string): string {
  const start = doc.indexOf(INDEX_MARKERS.start);
  const end = doc.indexOf(INDEX_MARKERS.end);
  if (start === -1 || end < start) {
    throw new Error(
      `Cannot write the routine index: docs/sql.md lacks the markers ${INDEX_MARKERS.start} ` +
        `and ${INDEX_MARKERS.end}`,
    );
  }
  return `${doc.slice(0, start + INDEX_MARKERS.start.length)}\n\n${index}\n\n${doc.slice(end)}`;
}
