// The test object every spec uses: baseURL is the server global-setup started,
// and a test fails on any error the page logs (a hydration mismatch, a panic).
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
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("console", (m) => {
        if (m.type() !== "error") return;
        // A page that answers 404 on purpose is not a broken page.
        const documentStatus =
          m.text().startsWith("Failed to load resource") && m.location().url === page.url();
        if (!documentStatus) errors.push(`${m.text()} (${m.location().url})`);
      });
      await use(errors);
      expect(errors, "errors logged by the page").toEqual([]);
    },
    { auto: true },
  ],
  signedIn: async ({ browser, baseURL }, use) => {
    const opened: BrowserContext[] = [];
    await use(async (name) => {
      const context = await browser.newContext({ baseURL, storageState: authFile(name) });
      opened.push(context);
      return context.newPage();
    });
    // A page left open would keep its viewer present for the next tests.
    for (const context of opened) await context.close();
  },
});

export { expect };
export { USERS, PASSWORD, authFile } from "./users";

/** Waits until the wasm bundle has hydrated the server-rendered page. */
export async function hydrated(page: import("@playwright/test").Page) {
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
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
