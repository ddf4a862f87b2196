/**
 * A scratch copy of the checkout, for runs that change files (the mutation audit, the
 * `sql:migration` workflow test) without touching the working tree.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);

/**
 * Copies the files `git ls-files` lists (tracked and untracked, not ignored, as they are in the
 * working tree) into a new temporary directory and returns its path.
 */
export async function copyCheckout(prefix = "sluice_checkout_"): Promise<string> {
  const listed = await new Deno.Command("git", {
    args: ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    cwd: ROOT,
    stdout: "piped",
  }).output();
  if (!listed.success) throw new Error("Cannot copy the checkout: git ls-files failed");
  const dir = await Deno.makeTempDir({ prefix });
  const files = new TextDecoder().decode(listed.stdout).split("\0").filter((f) => f !== "");
  for (const file of files) {
    const from = new URL(file, ROOT);
    // A deleted file still listed by the index is not part of the working tree.
    const info = await Deno.lstat(from).catch(() => null);
    if (info === null || !info.isFile) continue;
    const to = `${dir}/${file}`;
    await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
    await Deno.copyFile(from, to);
  }
  return dir;
}
