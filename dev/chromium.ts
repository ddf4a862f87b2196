/**
 * A headless Chromium driven over the DevTools protocol (a WebSocket, no client library): for the
 * dashboard's browser tests and its benchmark. Uses the system's Chromium (Debian package
 * `chromium`, installed by scripts/setup.sh); downloads nothing. Development infrastructure: not
 * part of the published package.
 *
 * @module
 */

/** Where {@linkcode findChromium} looks, in order, after `SLUICE_CHROMIUM`. */
const CANDIDATES = [
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
  "/usr/bin/google-chrome-stable",
];

/**
 * The Chromium executable: `SLUICE_CHROMIUM` when set, else the first of the usual paths that
 * exists; `null` when there is none.
 *
 * @example Usage
 * ```ts ignore
 * import { findChromium } from "./chromium.ts";
 *
 * console.log(findChromium() ?? "no chromium: apt-get install chromium");
 * ```
 */
export function findChromium(): string | null {
  const configured = Deno.env.get("SLUICE_CHROMIUM");
  if (configured !== undefined && configured !== "") return configured;
  for (const path of CANDIDATES) {
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch {
      // Not there; try the next.
    }
  }
  return null;
}

interface Pending {
  resolve(result: Record<string, unknown>): void;
  reject(error: Error): void;
}

interface Waiter {
  readonly method: string;
  readonly sessionId: string | undefined;
  readonly matches?: (params: Record<string, unknown>) => boolean;
  resolve(params: Record<string, unknown>): void;
}

/** Thrown when a DevTools command fails or a page script throws. */
export class DevToolsError extends Error {
  /** The protocol method, e.g. `Runtime.evaluate`. */
  readonly method: string;
  /** Describes the failed command. */
  constructor(method: string, message: string) {
    super(`Cannot ${method}: ${message}`);
    this.name = "DevToolsError";
    this.method = method;
  }
}

/** One DevTools WebSocket: numbered commands, their answers, and events awaited by name. */
class Connection {
  readonly #socket: WebSocket;
  readonly #pending = new Map<number, Pending & { method: string }>();
  readonly #waiters: Waiter[] = [];
  #next = 1;

  constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.onmessage = (event) => this.#receive(JSON.parse(event.data as string));
    socket.onclose = () => {
      for (const pending of this.#pending.values()) {
        pending.reject(new DevToolsError(pending.method, "the browser closed the connection"));
      }
      this.#pending.clear();
    };
  }

  #receive(message: {
    id?: number;
    result?: Record<string, unknown>;
    error?: { message: string };
    method?: string;
    params?: Record<string, unknown>;
    sessionId?: string;
  }): void {
    if (message.id !== undefined) {
      const pending = this.#pending.get(message.id);
      this.#pending.delete(message.id);
      if (message.error !== undefined) {
        pending?.reject(new DevToolsError(pending.method, message.error.message));
      } else pending?.resolve(message.result ?? {});
      return;
    }
    const index = this.#waiters.findIndex((waiter) =>
      waiter.method === message.method && waiter.sessionId === message.sessionId &&
      (waiter.matches?.(message.params ?? {}) ?? true)
    );
    if (index >= 0) this.#waiters.splice(index, 1)[0].resolve(message.params ?? {});
  }

  send(
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
  ): Promise<Record<string, unknown>> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, method });
      this.#socket.send(JSON.stringify({ id, method, params, sessionId }));
    });
  }

  /**
   * The next event `method` of the session (that `matches`, when given); register before causing
   * it.
   */
  next(
    method: string,
    sessionId?: string,
    matches?: (params: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>> {
    return new Promise((resolve) => this.#waiters.push({ method, sessionId, matches, resolve }));
  }

  close(): void {
    this.#socket.close();
  }
}

/** A browser tab. */
export class Page {
  readonly #connection: Connection;
  readonly #sessionId: string;

  /** A tab attached as `sessionId` (use {@linkcode Browser.newPage}). */
  constructor(connection: Connection, sessionId: string) {
    this.#connection = connection;
    this.#sessionId = sessionId;
  }

  #send(method: string, params: Record<string, unknown> = {}) {
    return this.#connection.send(method, params, this.#sessionId);
  }

  /**
   * Opens `url` and waits for its load event.
   *
   * @returns The milliseconds from navigating to the load event.
   */
  async goto(url: string): Promise<number> {
    // The load of this navigation's document, by its loader: the previous page's load event can
    // still be on its way (a click's navigation that a test saw commit but not finish loading).
    let loaderId: unknown;
    const loaded = this.#connection.next(
      "Page.lifecycleEvent",
      this.#sessionId,
      (params) => params.name === "load" && loaderId !== undefined && params.loaderId === loaderId,
    );
    const started = performance.now();
    const result = await this.#send("Page.navigate", { url });
    if (typeof result.errorText === "string") {
      throw new DevToolsError("Page.navigate", `${url}: ${result.errorText}`);
    }
    loaderId = result.loaderId;
    // A same-document navigation (a fragment) has no loader and no load of its own.
    if (typeof loaderId === "string") await loaded;
    return performance.now() - started;
  }

  /** The value of a JavaScript expression in the page (awaited when it is a promise). */
  async evaluate<T>(expression: string): Promise<T> {
    const result = await this.#send("Runtime.evaluate", {
      expression,
      returnByValue: true,
      awaitPromise: true,
    }) as {
      result: { value?: T };
      exceptionDetails?: { text: string; exception?: { description?: string } };
    };
    if (result.exceptionDetails !== undefined) {
      const details = result.exceptionDetails;
      throw new DevToolsError(
        "Runtime.evaluate",
        `${expression}: ${details.exception?.description ?? details.text}`,
      );
    }
    return result.result.value as T;
  }

  /** Waits until `expression` is truthy in the page; throws after `timeoutMs`. */
  async waitFor<T>(expression: string, what: string, timeoutMs = 15_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await this.evaluate<T>(expression);
      if (value) return value;
      if (Date.now() > deadline) {
        throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what} (${expression})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Saves a PNG of the whole page to `path`. */
  async screenshot(path: string): Promise<void> {
    const { data } = await this.#send("Page.captureScreenshot", {
      format: "png",
      captureBeyondViewport: true,
    }) as { data: string };
    await Deno.writeFile(path, Uint8Array.from(atob(data), (char) => char.charCodeAt(0)));
  }
}

/** A running headless Chromium; dispose it to stop it and remove its profile. */
export interface Browser extends AsyncDisposable {
  /** Opens a tab with the given viewport size (default 1280 × 900). */
  newPage(width?: number, height?: number): Promise<Page>;
}

/**
 * Starts a headless Chromium with a throwaway profile.
 *
 * @param executable The Chromium executable ({@linkcode findChromium}).
 * @returns The browser.
 * @throws {Error} When it does not start or print its DevTools address within 30 s.
 *
 * @example Usage
 * ```ts ignore
 * import { findChromium, launchChromium } from "./chromium.ts";
 *
 * await using browser = await launchChromium(findChromium()!);
 * const page = await browser.newPage();
 * await page.goto("http://127.0.0.1:4300/");
 * console.log(await page.evaluate<string>("document.title"));
 * ```
 */
export async function launchChromium(executable: string): Promise<Browser> {
  const profile = await Deno.makeTempDir({ prefix: "sluice_chromium_" });
  const child = new Deno.Command(executable, {
    args: [
      "--headless=new",
      // The test machines run as root, where Chromium's sandbox cannot start.
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--no-first-run",
      "--no-default-browser-check",
      "--remote-debugging-port=0",
      `--user-data-dir=${profile}`,
      "about:blank",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await child.status;
    // Chromium's helper processes inherit stderr and may outlive the main one for a moment:
    // cancelling closes the pipe now instead of whenever the last of them exits.
    await stderr.cancel().catch(() => {});
    await Deno.remove(profile, { recursive: true }).catch(() => {});
  };
  let address: string;
  try {
    address = await devToolsAddress(stderr);
  } catch (error) {
    await stop();
    throw error;
  }
  const socket = new WebSocket(address);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new Error(`Cannot connect to Chromium's DevTools at ${address}`));
  });
  const connection = new Connection(socket);
  return {
    async newPage(width = 1280, height = 900) {
      const { targetId } = await connection.send("Target.createTarget", { url: "about:blank" });
      const { sessionId } = await connection.send("Target.attachToTarget", {
        targetId,
        flatten: true,
      }) as { sessionId: string };
      await connection.send("Page.enable", {}, sessionId);
      await connection.send("Page.setLifecycleEventsEnabled", { enabled: true }, sessionId);
      await connection.send("Runtime.enable", {}, sessionId);
      await connection.send("Emulation.setDeviceMetricsOverride", {
        width,
        height,
        deviceScaleFactor: 1,
        mobile: false,
      }, sessionId);
      return new Page(connection, sessionId);
    },
    async [Symbol.asyncDispose]() {
      connection.close();
      await stop();
    },
  };
}

/** Reads Chromium's stderr until it prints `DevTools listening on ws://...`; drains the rest. */
async function devToolsAddress(reader: ReadableStreamDefaultReader<string>): Promise<string> {
  let text = "";
  const timeout = setTimeout(() => reader.cancel(), 30_000);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(text);
      if (match !== null) {
        // Keep reading so Chromium never blocks on a full pipe.
        (async () => {
          while (!(await reader.read().catch(() => ({ done: true }))).done);
        })();
        return match[1];
      }
    }
  } finally {
    clearTimeout(timeout);
  }
  throw new Error(`Cannot start Chromium: it printed no DevTools address:\n${text.slice(-2000)}`);
}
