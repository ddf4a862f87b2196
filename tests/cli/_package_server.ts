// Serves sluice as a registry would: exactly the files `deno publish --dry-run` lists, over HTTP on
// the loopback interface. A file the package does not publish answers 404, so the CLI loaded from
// here fails where the published package would.

const ROOT = new URL("../../", import.meta.url);

/** The files `deno publish` would upload, as paths relative to the repository root. */
export async function publishedFiles(): Promise<string[]> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["publish", "--dry-run", "--allow-dirty"],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  if (code !== 0) throw new Error(`deno publish --dry-run failed:\n${text}`);
  const files = [...text.matchAll(/^\s+(file:\/\/\S+) \([\d.]+\w*B\)$/gm)]
    .map((match) => match[1].slice(ROOT.href.length));
  if (files.length === 0) throw new Error(`deno publish --dry-run listed no files:\n${text}`);
  return files.sort();
}

/** A loopback server of the published files; dispose it to stop it. */
export interface PackageServer extends AsyncDisposable {
  /** The package root URL, ending in `/`. */
  readonly url: string;
  /** The published files, relative to the root. */
  readonly files: readonly string[];
}

/** Starts the server on a free port. */
export async function servePackage(): Promise<PackageServer> {
  const files = await publishedFiles();
  const published = new Set(files);
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname.slice(1));
    if (!published.has(path)) return new Response("not published", { status: 404 });
    const type = path.endsWith(".ts") ? "application/typescript" : "text/plain";
    return new Response(await Deno.readFile(new URL(path, ROOT)), {
      headers: { "content-type": type },
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/`,
    files,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
