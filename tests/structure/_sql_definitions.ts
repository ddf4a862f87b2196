// Finds the SQL objects a migration file defines or drops (functions, procedures, views,
// triggers), for the "one definition per release group" check in migrations_test.ts. A parser of
// the statements that name objects, not of SQL: comments, string literals and dollar-quoted bodies
// are blanked out first, so text inside a function body (an EXECUTE'd "create function ...", a
// comment in plpgsql) never counts.

/** What kind of object a statement names. */
export type SqlObjectKind = "function" | "procedure" | "view" | "trigger";

/** One `create` or `drop` of a schema object, as found in a migration file. */
export interface SqlStatement {
  /** `create` (including `create or replace`) or `drop`. */
  readonly action: "create" | "drop";
  readonly kind: SqlObjectKind;
  /**
   * The object's identity: `function sluice.f(text, bigint[])` (argument types normalized, names
   * and defaults left out), `view sluice.v`, `trigger t on sluice.tab`. For a `drop function f`
   * without an argument list, the key ends at the name (it drops the one function of that name).
   */
  readonly key: string;
  /** `kind` and the qualified name without arguments: `function sluice.f`. */
  readonly name: string;
  /** 1-based line of the statement's first keyword. */
  readonly line: number;
}

/** Thrown when a statement that names an object cannot be read (an unbalanced argument list). */
export class SqlParseError extends Error {
  override readonly name = "SqlParseError";
  /** 1-based line of the offending statement. */
  readonly line: number;
  /** The statement's start, as written. */
  readonly statement: string;
  constructor(line: number, statement: string, detail: string) {
    super(
      `Cannot read the SQL statement at line ${line} (${JSON.stringify(statement)}): ${detail}`,
    );
    this.line = line;
    this.statement = statement;
  }
}

/**
 * The text with comments, string literals and dollar-quoted strings replaced by spaces (line
 * breaks kept, so offsets and line numbers still match the original). Quoted identifiers stay;
 * a comment marker or quote inside one does not start anything.
 */
export function blankOutLiterals(text: string): string {
  const out = text.split("");
  const blank = (from: number, to: number) => {
    for (let i = from; i < to; i++) if (out[i] !== "\n") out[i] = " ";
  };
  const identifierChar = /[A-Za-z0-9_$]/;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === "-" && next === "-") {
      const end = text.indexOf("\n", i);
      const stop = end === -1 ? text.length : end;
      blank(i, stop);
      i = stop;
    } else if (c === "/" && next === "*") {
      // Block comments nest in PostgreSQL.
      let depth = 1;
      let j = i + 2;
      while (j < text.length && depth > 0) {
        const pair = text.slice(j, j + 2);
        if (pair === "/*" || pair === "*/") {
          depth += pair === "/*" ? 1 : -1;
          j += 2;
        } else {
          j++;
        }
      }
      blank(i, j);
      i = j;
    } else if (c === "'") {
      const escapes = i > 0 && /[eE]/.test(text[i - 1]) &&
        (i < 2 || !identifierChar.test(text[i - 2]));
      let j = i + 1;
      while (j < text.length) {
        if (escapes && text[j] === "\\") j += 2;
        else if (text[j] === "'" && text[j + 1] === "'") j += 2;
        else if (text[j] === "'") break;
        else j++;
      }
      blank(i, j + 1);
      i = j + 1;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length) {
        if (text[j] === '"' && text[j + 1] === '"') j += 2;
        else if (text[j] === '"') break;
        else j++;
      }
      i = j + 1;
    } else if (c === "$" && (i === 0 || !identifierChar.test(text[i - 1]))) {
      const opening = /\$([A-Za-z_][A-Za-z0-9_]*)?\$/y;
      opening.lastIndex = i;
      const tag = opening.exec(text);
      if (tag === null) {
        i++;
        continue;
      }
      const end = text.indexOf(tag[0], i + tag[0].length);
      const stop = end === -1 ? text.length : end + tag[0].length;
      blank(i, stop);
      i = stop;
    } else {
      i++;
    }
  }
  return out.join("");
}

const IDENT = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)`;
const NAME = String.raw`${IDENT}(?:\s*\.\s*${IDENT})?`;

function identifier(part: string): string {
  return part.startsWith('"') ? part.slice(1, -1).replaceAll('""', '"') : part.toLowerCase();
}

function qualifiedName(written: string): string {
  return (written.match(new RegExp(IDENT, "g")) ?? []).map(identifier).join(".");
}

const TYPE_ALIASES: Record<string, string> = {
  int: "integer",
  int4: "integer",
  int2: "smallint",
  int8: "bigint",
  bool: "boolean",
  float4: "real",
  float8: "double precision",
  decimal: "numeric",
  varchar: "character varying",
  char: "character",
  timestamptz: "timestamp with time zone",
  timestamp: "timestamp without time zone",
  timetz: "time with time zone",
  time: "time without time zone",
};

// A type written in several words, which must not be read as "<argument name> <type>".
const MULTI_WORD_TYPE =
  /^(double\s+precision|(timestamp|time)(\s*\(\s*\d+\s*\))?\s+with(out)?\s+time\s+zone|(character|char|bit)\s+varying|national\s+character(\s+varying)?|interval(\s+[a-z]+)+)(\s*\([^)]*\))?(\s*\[\s*\d*\s*\])*$/i;

/** The normalized type of one written type: lowercased, typmod dropped, aliases resolved. */
function normalizeType(written: string): string {
  const arrays = (written.match(/\[\s*\d*\s*\]/g) ?? []).length;
  let base = written.replace(/\s*\[\s*\d*\s*\]/g, "").replace(/\s*\([^)]*\)/g, "").trim();
  base = base.replace(/\s+/g, " ");
  base = base.startsWith('"') ? identifier(base) : base.toLowerCase();
  base = base.replace(/^pg_catalog\./, "");
  if (/^interval /.test(base)) base = "interval";
  base = TYPE_ALIASES[base] ?? base;
  if (base.startsWith("_")) return `${base.slice(1)}[]`; // _text is text[]
  return base + "[]".repeat(arrays);
}

/** Splits at commas outside parentheses. */
function splitTopLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    if (list[i] === "(") depth++;
    else if (list[i] === ")") depth--;
    else if (list[i] === "," && depth === 0) {
      parts.push(list.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(list.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== "");
}

/**
 * The identity argument types of an argument list (the text between the parentheses): argument
 * names, defaults and, for functions, OUT arguments left out (PostgreSQL identifies a function by
 * its input types; a procedure, since PostgreSQL 14, by all of them).
 */
export function argumentTypes(list: string, kind: "function" | "procedure"): string[] {
  const types: string[] = [];
  for (const raw of splitTopLevel(list)) {
    let arg = raw.replace(/\s+default\s+[\s\S]*$/i, "").replace(/\s*=[\s\S]*$/, "").trim();
    const mode = /^(in|out|inout|variadic)\s+/i.exec(arg);
    if (mode !== null) {
      arg = arg.slice(mode[0].length).trim();
      if (mode[1].toLowerCase() === "out" && kind === "function") continue;
    }
    const first = new RegExp(`^${IDENT}`).exec(arg)?.[0] ?? arg;
    const rest = arg.slice(first.length).trim();
    const typeOnly = rest === "" || /^[\[(.]/.test(rest) || MULTI_WORD_TYPE.test(arg);
    types.push(normalizeType(typeOnly ? arg : rest));
  }
  return types;
}

/** The index just after the parenthesis that closes the one at `open`, or -1. */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")" && --depth === 0) return i + 1;
    else if (text[i] === ";") return -1;
  }
  return -1;
}

function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (text[i] === "\n") line++;
  return line;
}

/** Every create and drop of a function, procedure, view or trigger in `sql`, in text order. */
export function sqlStatements(sql: string): SqlStatement[] {
  const text = blankOutLiterals(sql);
  const found: (SqlStatement & { at: number })[] = [];
  const excerpt = (at: number) => sql.slice(at, at + 60).split("\n")[0];

  const routine = new RegExp(
    String.raw`\bcreate\s+(?:or\s+replace\s+)?(function|procedure)\s+(${NAME})\s*\(`,
    "gi",
  );
  for (const m of text.matchAll(routine)) {
    const kind = m[1].toLowerCase() as "function" | "procedure";
    const open = m.index + m[0].length - 1;
    const close = closingParen(text, open);
    if (close === -1) {
      throw new SqlParseError(lineAt(sql, m.index), excerpt(m.index), "no closing parenthesis");
    }
    const name = `${kind} ${qualifiedName(m[2])}`;
    const args = argumentTypes(text.slice(open + 1, close - 1), kind);
    found.push({
      action: "create",
      kind,
      name,
      key: `${name}(${args.join(", ")})`,
      line: lineAt(sql, m.index),
      at: m.index,
    });
  }

  const view = new RegExp(
    String
      .raw`\bcreate\s+(?:or\s+replace\s+)?(?:(?:temp|temporary)\s+)?(?:recursive\s+)?(?:materialized\s+)?view\s+(?:if\s+not\s+exists\s+)?(${NAME})`,
    "gi",
  );
  for (const m of text.matchAll(view)) {
    const name = `view ${qualifiedName(m[1])}`;
    found.push({
      action: "create",
      kind: "view",
      name,
      key: name,
      line: lineAt(sql, m.index),
      at: m.index,
    });
  }

  const trigger = new RegExp(
    String
      .raw`\bcreate\s+(?:or\s+replace\s+)?(?:constraint\s+)?trigger\s+(${IDENT})[^;]*?\bon\s+(${NAME})`,
    "gi",
  );
  for (const m of text.matchAll(trigger)) {
    const name = `trigger ${identifier(m[1])} on ${qualifiedName(m[2])}`;
    found.push({
      action: "create",
      kind: "trigger",
      name,
      key: name,
      line: lineAt(sql, m.index),
      at: m.index,
    });
  }

  const drop =
    /\bdrop\s+(function|procedure|materialized\s+view|view|trigger)\s+(?:if\s+exists\s+)?/gi;
  for (const m of text.matchAll(drop)) {
    const word = m[1].toLowerCase().replace(/\s+/g, " ");
    const line = lineAt(sql, m.index);
    const end = text.indexOf(";", m.index);
    const statement = text.slice(m.index + m[0].length, end === -1 ? undefined : end);
    if (word === "trigger") {
      const t = new RegExp(String.raw`^(${IDENT})\s+on\s+(${NAME})`, "i").exec(statement.trim());
      if (t === null) {
        throw new SqlParseError(line, excerpt(m.index), "expected <trigger> on <table>");
      }
      const name = `trigger ${identifier(t[1])} on ${qualifiedName(t[2])}`;
      found.push({ action: "drop", kind: "trigger", name, key: name, line, at: m.index });
      continue;
    }
    const targets = splitTopLevel(statement.replace(/\s+(cascade|restrict)\s*$/i, ""));
    for (const target of targets) {
      const t = new RegExp(String.raw`^(${NAME})\s*(\(([\s\S]*)\))?$`).exec(target);
      if (t === null) throw new SqlParseError(line, excerpt(m.index), `cannot read ${target}`);
      if (word.endsWith("view")) {
        const name = `view ${qualifiedName(t[1])}`;
        found.push({ action: "drop", kind: "view", name, key: name, line, at: m.index });
        continue;
      }
      const kind = word === "procedure" ? "procedure" : "function";
      const name = `${kind} ${qualifiedName(t[1])}`;
      const key = t[2] === undefined ? name : `${name}(${argumentTypes(t[3], kind).join(", ")})`;
      found.push({ action: "drop", kind, name, key, line, at: m.index });
    }
  }
  return found.sort((a, b) => a.at - b.at).map(({ at: _at, ...statement }) => statement);
}

/** A migration file with its text and the release group it belongs to. */
export interface GroupedMigration {
  /** The file name (sorts in apply order). */
  readonly file: string;
  readonly text: string;
  /** The release that first shipped the file (its version), or "unreleased". */
  readonly group: string;
}

/**
 * Every repeated definition within one release group, as messages: an object created by two
 * migrations of the same group, or dropped by a migration of the group that created it (a drop
 * and a new create is a redefinition too). A migration may redefine or drop an object a migration
 * of an earlier group created: that is how a fix to a released function lands.
 */
export function redefinitionsWithinGroups(migrations: readonly GroupedMigration[]): string[] {
  const problems: string[] = [];
  // The definition currently in force for each key: where and in which group.
  const live = new Map<string, { where: string; group: string; name: string }>();
  const sorted = [...migrations].sort((a, b) => a.file < b.file ? -1 : a.file > b.file ? 1 : 0);
  for (const { file, text, group } of sorted) {
    for (const statement of sqlStatements(text)) {
      const where = `${file}:${statement.line}`;
      if (statement.action === "create") {
        const earlier = live.get(statement.key);
        if (earlier !== undefined && earlier.group === group) {
          problems.push(
            `${statement.key} is defined in ${earlier.where} and again in ${where} (both ${
              groupLabel(group)
            }): keep one body, in the earlier file`,
          );
        }
        live.set(statement.key, { where, group, name: statement.name });
        continue;
      }
      // A drop without an argument list (and every view or trigger drop) matches by name.
      const byName = statement.key === statement.name;
      for (const [key, earlier] of live) {
        const matches = byName ? earlier.name === statement.name : key === statement.key;
        if (!matches) continue;
        if (earlier.group === group) {
          problems.push(
            `${where} drops ${key}, which ${earlier.where} defines (both ${
              groupLabel(group)
            }): change the definition in its file instead`,
          );
        }
        live.delete(key);
      }
    }
  }
  return problems;
}

function groupLabel(group: string): string {
  return group === "unreleased" ? "unreleased" : `first released in ${group}`;
}
