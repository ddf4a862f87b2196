/** Reads a text file next to the code: from disk for `file:` URLs, over HTTP(S) otherwise. */
export async function readText(url: URL): Promise<string> {
  if (url.protocol === "file:") return await Deno.readTextFile(url);
  const response = await fetch(url);
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`Cannot read "${url.href}": HTTP ${response.status} ${response.statusText}`);
  }
  return await response.text();
}
