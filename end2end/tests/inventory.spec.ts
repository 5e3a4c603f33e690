import { test, expect, hydrated } from "./fixtures";

test("the inventory lists manifest connectors from the drop folder with their source", async ({ page }) => {
  await page.goto("/inventory");
  await hydrated(page);
  const hn = page.locator('tr[data-connector="hn-algolia"]');
  await expect(hn).toContainText("Hacker News (Algolia)");
  await expect(hn.locator(".source")).toHaveText("manifest hn-algolia.toml");
  await expect(page.locator('tr[data-connector="demo"] .source')).toHaveText("built-in");
  const files = page.locator(".manifest-files li");
  await expect(files).toHaveCount(3);
  await expect(page.locator('.manifest-files li[data-state="serving"]')).toHaveCount(3);
});
