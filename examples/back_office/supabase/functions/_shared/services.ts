/**
 * In-process stand-ins for the external services the back office calls: a mail provider, a PDF
 * renderer, an image resizer, webhook receivers and a payment provider. They do no network I/O;
 * their latencies come from the environment, so the benchmark can make a step slow (`RESIZE_MS`)
 * without changing the flows.
 *
 * @module
 */

/** A mail as the provider receives it. */
export interface Mail {
  readonly to: string;
  readonly subject: string;
  readonly body: string;
}

/** The services a handler reaches through `servicesFromEnv(ctx.env)`. */
export interface Services {
  /** Sends a mail; returns the provider's message id. */
  sendMail(mail: Mail, signal: AbortSignal): Promise<string>;
  /** Renders a PDF document; returns its bytes. */
  renderPdf(title: string, lines: readonly string[], signal: AbortSignal): Promise<Uint8Array>;
  /** Resizes an image to `width`, keeping its aspect ratio; returns the new size and bytes. */
  resize(
    image: { readonly width: number; readonly height: number },
    width: number,
    signal: AbortSignal,
  ): Promise<{ width: number; height: number; bytes: number }>;
  /** POSTs a webhook; returns the receiver's HTTP status. */
  postWebhook(url: string, body: unknown, signal: AbortSignal): Promise<number>;
  /** Refunds an amount of an order; returns the provider's refund reference. */
  refund(orderId: number, amountCents: number, signal: AbortSignal): Promise<string>;
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", abort, { once: true });
  });
}

/** A short stable id for `text`, as providers hand out. */
async function digest(prefix: string, text: string): Promise<string> {
  const bytes = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return prefix + Array.from(bytes.slice(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
}

function milliseconds(env: Readonly<Record<string, string | undefined>>, name: string): number {
  const value = Number(env[name] ?? "0");
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`${name} must be a number of milliseconds >= 0, got "${env[name]}"`);
  }
  return value;
}

/**
 * The stand-ins, with latencies from `env`: `MAIL_MS`, `RENDER_MS`, `RESIZE_MS`, `WEBHOOK_MS`
 * (default 0 each). A webhook URL containing `down` answers 503, every other one 200.
 */
export function servicesFromEnv(env: Readonly<Record<string, string | undefined>>): Services {
  const mailMs = milliseconds(env, "MAIL_MS");
  const renderMs = milliseconds(env, "RENDER_MS");
  const resizeMs = milliseconds(env, "RESIZE_MS");
  const webhookMs = milliseconds(env, "WEBHOOK_MS");
  return {
    async sendMail(mail, signal) {
      await delay(mailMs, signal);
      return await digest("msg_", `${mail.to}\n${mail.subject}\n${mail.body}`);
    },
    async renderPdf(title, lines, signal) {
      await delay(renderMs, signal);
      return new TextEncoder().encode(`%PDF-1.7\n${title}\n${lines.join("\n")}\n%%EOF`);
    },
    async resize(image, width, signal) {
      await delay(resizeMs, signal);
      const height = Math.max(1, Math.round(image.height * width / image.width));
      return { width, height, bytes: width * height * 3 };
    },
    async postWebhook(url, _body, signal) {
      await delay(webhookMs, signal);
      return url.includes("down") ? 503 : 200;
    },
    async refund(orderId, amountCents, signal) {
      await delay(mailMs, signal);
      return await digest("re_", `${orderId}:${amountCents}`);
    },
  };
}
