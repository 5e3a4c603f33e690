// Every page passes axe-core's automated checks (WCAG 2 A and AA rules)
// with no serious or critical violation, signed in and out, and the triage
// view with its connector menu open and keyboard focus visible on a chip.
import AxeBuilder from "@axe-core/playwright";
import type { Page } from "@playwright/test";
import { test, expect, hydrated, openDemoSet } from "./fixtures";

async function violations(page: Page) {
  const result = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

for (const path of ["/record-sets", "/inventory", "/packs", "/spend", "/members", "/settings"]) {
  test(`${path} has no serious accessibility violation`, async ({ page }) => {
    await page.goto(path);
    await hydrated(page);
    expect(await violations(page)).toEqual([]);
  });
}

test("the signed-out pages have no serious accessibility violation", async ({ browser, baseURL }) => {
  const page = await (await browser.newContext({ baseURL, storageState: undefined })).newPage();
  for (const path of ["/sign-in", "/set-password"]) {
    await page.goto(path);
    await hydrated(page);
    expect(await violations(page), path).toEqual([]);
  }
});

test("the triage view, its chips and its open menu have no serious accessibility violation", async ({ page }) => {
  await openDemoSet(page);
  expect(await violations(page)).toEqual([]);
  // The keyboard reaches a chip, with a visible focus ring, and opens its menu.
  const card = page.locator("article.card").first();
  await card.focus();
  await page.keyboard.press("Tab");
  const chip = card.locator("button.chip").first();
  await expect(chip).toBeFocused();
  const ring = await chip.evaluate((el) => getComputedStyle(el).outlineStyle);
  expect(ring).not.toBe("none");
  await page.keyboard.press("Tab");
  await expect(card.locator("button.caret").first()).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("menu", { name: "Connectors" })).toBeVisible();
  expect(await violations(page)).toEqual([]);
});

test("the compact view, its facets and the bulk dialog have no serious accessibility violation", async ({ page }) => {
  await openDemoSet(page);
  await page.getByRole("link", { name: "Compact" }).click();
  await expect(page.getByRole("region", { name: "Facets" })).toBeVisible();
  await expect(page.locator(".compact .line").first()).toBeVisible();
  expect(await violations(page)).toEqual([]);
  await page.getByRole("button", { name: "Decide in bulk…" }).click();
  await expect(page.getByRole("dialog", { name: "Decide in bulk" })).toBeVisible();
  expect(await violations(page)).toEqual([]);
});
