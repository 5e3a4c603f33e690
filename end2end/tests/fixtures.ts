// The test object every spec uses: baseURL is the server global-setup started,
// and a test fails on any error its pages log (a hydration mismatch, a panic).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test as base, expect } from "@playwright/test";
import type { BrowserContext, Page } from "@playwright/test";
import { authFile, type UserName } from "./users";

export const test = base.extend<{
  pageErrors: string[];
  /** A page in a new browser context signed in as that user; closed after the test. */
  signedIn: (name: UserName) => Promise<Page>;
}>({
  baseURL: async ({}, use) => {
    const url = process.env.SWITCHYARD_URL;
    if (!url) throw new Error("SWITCHYARD_URL is unset: global-setup.ts did not run");
    await use(url);
  },
  pageErrors: [
    async ({ page }, use) => {
      const errors: string[] = [];
      watchErrors(page, errors);
      await use(errors);
      expect(errors, "errors logged by the page").toEqual([]);
    },
    { auto: true },
  ],
  signedIn: async ({ browser, baseURL, pageErrors }, use) => {
    const opened: BrowserContext[] = [];
    await use(async (name) => {
      const context = await browser.newContext({ baseURL, storageState: authFile(name) });
      opened.push(context);
      const page = await context.newPage();
      watchErrors(page, pageErrors, `${name}: `);
      return page;
    });
    // A page left open would keep its viewer present for the next tests.
    for (const context of opened) await context.close();
  },
});

/** What each watched page has logged as an error and the requests it has
 * in flight, for a failed wait to say why. */
const watched = new WeakMap<Page, { errors: string[]; inFlight: Set<string> }>();

/** Adds what `page` logs as an error (a panic, a hydration mismatch, a
 * failed request) to `errors`, each prefixed with `who`. */
function watchErrors(page: Page, errors: string[], who = "") {
  const inFlight = new Set<string>();
  watched.set(page, { errors, inFlight });
  page.on("request", (r) => inFlight.add(`${r.method()} ${r.url()}`));
  page.on("requestfinished", (r) => inFlight.delete(`${r.method()} ${r.url()}`));
  page.on("requestfailed", (r) => {
    inFlight.delete(`${r.method()} ${r.url()}`);
    if (r.failure()?.errorText !== "net::ERR_ABORTED") {
      errors.push(`${who}${r.method()} ${r.url()} failed: ${r.failure()?.errorText}`);
    }
  });
  page.on("pageerror", (e) => errors.push(`${who}${e.message}`));
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    // A refusal (4xx) is an answer the page shows, as is a page that
    // answers 404 on purpose; a 5xx is not.
    const refused = /^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text());
    if (!refused) errors.push(`${who}${m.text()} (${m.location().url})`);
  });
}

export { expect };
export { USERS, PASSWORD, authFile } from "./users";

/** Waits until the wasm bundle has hydrated the server-rendered page. */
export async function hydrated(page: Page) {
  try {
    await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
  } catch (e) {
    // Say what the page was doing: a hydration that never ends has left
    // no trace of its own (and CI keeps only the log).
    const seen = watched.get(page);
    const state = await page
      .evaluate(() => `readyState ${document.readyState}, body ${document.body.getAttributeNames().join(" ")}`)
      .catch((err) => `(could not read the page: ${err})`);
    throw new Error(
      `${page.url()} did not hydrate: ${state}; requests in flight: ${[...(seen?.inFlight ?? [])].join(", ") || "none"}; ` +
        `errors logged: ${seen?.errors.join(" | ") || "none"}\n${e}`,
    );
  }
}

/** Opens the demo record set (made-up companies) and waits for its live stream. */
export async function openDemoSet(page: Page) {
  await page.goto("/record-sets");
  await hydrated(page);
  await page.getByRole("link", { name: "Demo companies (made-up data)" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("Demo companies");
  await expect(page.locator("body")).toHaveAttribute("data-live", "true");
}

/** A record's chip for a pack on the triage view. */
export function chip(page: Page, record: string, pack: string) {
  return page.locator(`article.card:has(h2:text-is("${record}")) button.chip[data-pack="${pack}"]`);
}

/** A provider on this machine answering with `handle`; its base URL, and how to stop it. */
export async function localProvider(
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}
