// The release record (releases.json at the repository root): each released version and the commit
// it was cut from. Tags may not travel with a clone; this file does, so tests read it.

/** One released version as releases.json records it. */
export interface Release {
  /** The version, as in deno.json at that commit (e.g. "0.1.0"). */
  readonly version: string;
  /** The full 40-hex commit the version was cut from. */
  readonly commit: string;
  /** The release date, YYYY-MM-DD. */
  readonly date: string;
}

/** The repository root. */
export const ROOT = new URL("../../", import.meta.url);

/** The message a test skipped for want of a release carries. */
export const NO_RELEASE = "no released version recorded in releases.json yet";

/** Thrown when releases.json does not have the shape the tests rely on. */
export class ReleaseRecordError extends Error {
  override readonly name = "ReleaseRecordError";
  /** The offending entry (or the whole file's content). */
  readonly entry: unknown;
  constructor(detail: string, entry: unknown) {
    super(`Cannot read releases.json: ${detail}: ${JSON.stringify(entry)}`);
    this.entry = entry;
  }
}

/** Reads and validates releases.json, oldest release first. */
export async function readReleases(): Promise<Release[]> {
  const parsed: unknown = JSON.parse(await Deno.readTextFile(new URL("releases.json", ROOT)));
  if (!Array.isArray(parsed)) throw new ReleaseRecordError("the file is not a JSON list", parsed);
  const seen = new Set<string>();
  for (const entry of parsed) {
    const { version, commit, date } = (entry ?? {}) as Record<string, unknown>;
    if (typeof version !== "string" || !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) {
      throw new ReleaseRecordError("version is not a semantic version", entry);
    }
    if (typeof commit !== "string" || !/^[0-9a-f]{40}$/.test(commit)) {
      throw new ReleaseRecordError("commit is not a full 40-hex commit id", entry);
    }
    if (typeof date !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(date)) {
      throw new ReleaseRecordError("date is not YYYY-MM-DD", entry);
    }
    if (seen.has(version)) throw new ReleaseRecordError("version recorded twice", entry);
    seen.add(version);
  }
  return parsed as Release[];
}

/** Runs git in the repository root; throws naming the arguments and stderr on failure. */
export async function git(...args: string[]): Promise<string> {
  const output = await new Deno.Command("git", {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(
      `Cannot run git ${args.join(" ")}: ${new TextDecoder().decode(output.stderr).trim()}`,
    );
  }
  return new TextDecoder().decode(output.stdout);
}

/**
 * States of `main` between releases that databases were built from and must upgrade from (the
 * 0.2.0 release upgrades the pre-release state of 2026-12-06 as well as 0.1.0): their migration
 * files are frozen like a release's, and later files form a new group of "one definition per
 * release" (tests/structure/migrations_test.ts), so a fix to a routine they define is a new file.
 */
export const PRE_RELEASE_FREEZES: readonly { label: string; commit: string }[] = [
  { label: "main before 0.2.0", commit: "ebdf6cddba14bada4ae33d5143bbbb49380b1ca3" },
];

/**
 * The commits the "released migrations never change" check runs against: every recorded release
 * and pre-release freeze ({@linkcode PRE_RELEASE_FREEZES}) in commit order, or, for development,
 * the one commit `SLUICE_RELEASE_FROM` names (any revision git resolves).
 */
export async function frozenCommits(): Promise<{ label: string; commit: string }[]> {
  const override = Deno.env.get("SLUICE_RELEASE_FROM");
  if (override) {
    return [{ label: `SLUICE_RELEASE_FROM=${override}`, commit: override }];
  }
  const releases = (await readReleases()).map((r) => ({ label: r.version, commit: r.commit }));
  const all = [...releases, ...PRE_RELEASE_FREEZES];
  // Oldest first: a file belongs to the group of the first frozen commit that holds it.
  const order = await Promise.all(
    all.map(async (point) => Number((await git("log", "-1", "--format=%ct", point.commit)).trim())),
  );
  return all.map((point, index) => ({ point, at: order[index] }))
    .sort((a, b) => a.at - b.at).map(({ point }) => point);
}
