import { test, expect, hydrated, openDemoSet } from "./fixtures";

test("the shell is rendered by the server", async ({ request }) => {
  const res = await request.get("/record-sets");
  expect(res.status()).toBe(200);
  // Hydration's empty markers (`<!>`) sit between elements and text.
  const html = (await res.text()).replaceAll("<!>", "");
  expect(html).toContain("<h1>Record sets</h1>");
  expect(html).toContain('href="/inventory"');
  // The build's content-hashed names, which browsers keep for good.
  const script = html.match(/\/pkg\/(switchyard-[0-9a-f]{16}\/switchyard)\.js/);
  expect(script, "a hashed script name").not.toBeNull();
  expect(html).toContain(`/pkg/${script![1]}.css`);
  expect(res.headers()["cache-control"]).toBe("no-store");
  const file = await request.get(`/pkg/${script![1]}_bg.wasm`);
  expect(file.status()).toBe(200);
  expect(file.headers()["cache-control"]).toBe("public, max-age=31536000, immutable");
});

test("the page hydrates and navigates without a full reload", async ({ page }) => {
  await page.goto("/record-sets");
  await hydrated(page);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Record sets");

  // A full page load would wipe this marker; client-side routing keeps it.
  await page.evaluate(() => ((window as any).__sameDocument = true));
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Inventory" }).click();
  await expect(page).toHaveURL(/\/inventory$/);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Inventory");
  await expect(page.getByRole("link", { name: "Inventory" })).toHaveAttribute("aria-current", "page");
  expect(await page.evaluate(() => (window as any).__sameDocument)).toBe(true);
});

test("an unknown address answers 404 with a page", async ({ page }) => {
  const res = await page.goto("/no-such-page");
  expect(res?.status()).toBe(404);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Not found");
});

test("the triage view loads no other page's code; opening one fetches its chunk", async ({ page, signedIn }) => {
  await openDemoSet(page);
  const set = page.url();
  // A fresh browser opening the set's address: the triage view's module only.
  const fresh = await signedIn("ada");
  const modules: string[] = [];
  fresh.on("request", (r) => {
    if (r.url().includes(".wasm")) modules.push(new URL(r.url()).pathname);
  });
  await fresh.goto(set);
  await expect(fresh.locator("body")).toHaveAttribute("data-live", "true");
  await expect(fresh.locator("button.chip").first()).toBeEnabled();
  // The main module first; then, once the stream opens, the chunk that
  // reads its events (with the code it shares with other chunks). No page's.
  expect(modules[0]).toMatch(/\/switchyard_bg\.wasm$/);
  await expect.poll(() => modules.some((m) => /\/split_live_events\.wasm$/.test(m))).toBe(true);
  const others = modules.filter((m) => !/\/(switchyard_bg|split_live_events|chunk_\d+)\.wasm$/.test(m));
  expect(others, "no other page's code").toEqual([]);
  await fresh.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Inventory" }).click();
  await expect(fresh.getByRole("heading", { level: 1 })).toHaveText("Inventory");
  await expect(fresh.locator('tr[data-connector="demo"]')).toBeVisible();
  expect(modules.some((m) => /\/split___inventory_route_view_\d+\.wasm$/.test(m)), modules.join("\n")).toBe(true);
});
