import { test, expect, hydrated, openDemoSet } from "./fixtures";

// A phone held upright: every page fits its width (wide tables scroll
// inside themselves), and chips stay large enough to tap.
const PHONE = { width: 390, height: 844 };

async function fitsTheWidth(page: import("@playwright/test").Page, where: string) {
  const { scroll, inner } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    inner: window.innerWidth,
  }));
  expect(scroll, `${where} is ${scroll} px wide on a ${inner} px screen`).toBeLessThanOrEqual(inner);
}

test("at a phone's width every page fits the screen, chips stay tappable and the menu fits", async ({ signedIn }) => {
  const ada = await signedIn("ada");
  await ada.setViewportSize(PHONE);
  for (const path of ["/record-sets", "/inventory", "/packs", "/spend", "/members", "/settings"]) {
    await ada.goto(path);
    await hydrated(ada);
    await fitsTheWidth(ada, path);
  }
  await openDemoSet(ada);
  await fitsTheWidth(ada, "a record set");
  const chip = ada.locator("article.card").first().locator("button.chip").first();
  const box = (await chip.boundingBox())!;
  expect(box.height, "a chip's height").toBeGreaterThanOrEqual(32);
  expect(box.width, "a chip's width").toBeGreaterThanOrEqual(32);
  await chip.click({ button: "right" });
  const menu = ada.getByRole("menu", { name: "Connectors" });
  await expect(menu).toBeVisible();
  const placed = (await menu.boundingBox())!;
  expect(placed.x).toBeGreaterThanOrEqual(0);
  expect(placed.x + placed.width).toBeLessThanOrEqual(PHONE.width);
  await fitsTheWidth(ada, "a record set with a menu open");
});
