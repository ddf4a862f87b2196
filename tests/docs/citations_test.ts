// The repository documents itself: citations point at sections of docs/, and those sections exist.
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

async function trackedTextFiles(): Promise<Map<string, string>> {
  const { code, stdout, stderr } = await new Deno.Command("git", {
    args: ["ls-files", "-z"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const files = new Map<string, string>();
  for (const path of new TextDecoder().decode(stdout).split("\0")) {
    if (!/\.(ts|sql|md|json|sh)$/.test(path)) continue;
    // A tracked file deleted in the working tree is no citation.
    const text = await Deno.readTextFile(new URL(path, ROOT)).catch(() => undefined);
    if (text !== undefined) files.set(path, text);
  }
  return files;
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
function anchor(heading: string): string {
  return heading.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replaceAll(" ", "-");
}

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (heading !== null) anchors.add(anchor(heading[1].trim()));
  }
  return anchors;
}

Deno.test("no tracked file cites the spec that is not part of this repository", async () => {
  const needle = ["DESIGN", "md"].join(".");
  const citing = [...(await trackedTextFiles())]
    .filter(([, text]) => text.includes(needle))
    .map(([path]) => path);
  assert.deepEqual(citing, [], `cite docs/architecture.md or docs/sql.md instead of ${needle}`);
});

Deno.test("every citation of a section of docs/ names a heading that exists", async () => {
  const files = await trackedTextFiles();
  const docs = new Map<string, Set<string>>();
  for (const [path, text] of files) {
    if (path.startsWith("docs/") && path.endsWith(".md")) {
      docs.set(path.slice(path.lastIndexOf("/") + 1), anchorsOf(text));
    }
  }
  assert.ok(docs.get("architecture.md")?.has("message-classification"));
  const broken: string[] = [];
  for (const [path, text] of files) {
    for (const [, name, section] of text.matchAll(/([a-z_]+\.md)#([\p{L}\p{N}_-]+)/gu)) {
      const anchors = docs.get(name);
      if (anchors !== undefined && !anchors.has(section)) {
        broken.push(`${path}: ${name}#${section}`);
      }
    }
  }
  assert.deepEqual(broken, []);
});
