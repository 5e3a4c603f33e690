// The test object every spec uses: baseURL is the server global-setup started,
// and a test fails on any error the page logs (a hydration mismatch, a panic).
import { test as base, expect } from "@playwright/test";

export const test = base.extend<{ pageErrors: string[] }>({
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
});

export { expect };
export { USERS, PASSWORD, authFile } from "./users";

/** Waits until the wasm bundle has hydrated the server-rendered page. */
export async function hydrated(page: import("@playwright/test").Page) {
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
}
