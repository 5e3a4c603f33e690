import { test, expect, hydrated, openDemoSet, localProvider } from "./fixtures";

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

// A news API on this machine that answers only the key it was given.
const KEY = "e2e-provider-key-0042";
function fakeNewsProvider() {
  return localProvider((req, res) => {
    const query = new URL(req.url ?? "/", "http://localhost").searchParams.get("q") ?? "";
    if (req.headers["x-api-key"] !== KEY) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end('{"error": "invalid key"}');
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        results: [
          { url: `https://fake-news.example/${encodeURIComponent(query)}`, title: `E2E story on ${query}`, text: "<b>from</b> the fake provider" },
        ],
      }),
    );
  });
}

function manifest(base: string): string {
  return `id = "e2e-news"
display_name = "E2E news"
short_label = "E2E"
capabilities = ["search.news"]
cost_tier = "free"
requires_env = ["E2E_NEWS_KEY"]

[request]
url = "${base}/search"
query = { q = "{{query}}" }
headers = { x-api-key = "{{secret.E2E_NEWS_KEY}}" }

[response]
items = "$.results[*]"
url = "$.url"
title = "$.title"
snippet = "$.text"
`;
}

test("an admin adds a connector in the browser and another person fires it from an open menu", async ({ signedIn }) => {
  const provider = await fakeNewsProvider();
  try {
    // Bob is already triaging, with the news chip's menu open.
    const bob = await signedIn("bob");
    await openDemoSet(bob);
    const news = bob.locator('article.card:has(h2:text-is("Dunmore Textiles (demo)")) [data-pack="news"]');
    await news.click({ button: "right" });
    const menu = bob.getByRole("menu", { name: "Connectors" });
    await expect(menu.locator('[data-connector="demo"]')).toBeVisible();
    await expect(menu.locator('[data-connector="e2e-news"]')).toHaveCount(0);

    // Ada sets the key the connector will need; the page never shows it.
    const ada = await signedIn("ada");
    await ada.goto("/inventory");
    await hydrated(ada);
    const addSecret = ada.locator("form.add-secret");
    await addSecret.getByLabel("Name").fill("E2E_NEWS_KEY");
    await addSecret.getByLabel("Value").fill(KEY);
    await addSecret.getByRole("button", { name: "Set secret" }).click();
    const secret = ada.locator('tr[data-secret="E2E_NEWS_KEY"]');
    await expect(secret).toHaveAttribute("data-state", "set");
    await expect(secret).toContainText("set by ada@demo.test");
    await expect(addSecret.getByLabel("Value")).toHaveValue("");

    // A draft with a mistake says where; the fixed one test-fires with the key.
    const editor = ada.getByLabel("Manifest");
    await editor.fill(manifest(provider.url).replace('cost_tier = "free"', 'cost_tier = "cheap"'));
    await ada.locator('input[name="test-query"]').fill("Grace Hopper");
    await ada.getByRole("button", { name: "Test fire" }).click();
    await expect(ada.locator(".problems")).toContainText("cost_tier");
    await editor.fill(manifest(provider.url));
    await ada.getByRole("button", { name: "Test fire" }).click();
    const report = ada.locator('.test-report[data-outcome="found"]');
    await expect(report).toContainText("Outcome: found · 1 result");
    await expect(report.getByRole("link", { name: "E2E story on Grace Hopper" })).toHaveAttribute("href", "https://fake-news.example/Grace%20Hopper");
    await expect(report).toContainText("from the fake provider");
    // Nothing is registered before saving.
    await expect(ada.locator('tr[data-connector="e2e-news"]')).toHaveCount(0);

    await ada.getByRole("button", { name: "Save" }).click();
    await expect(ada.locator(".notice")).toContainText("Saved E2E news (e2e-news)");
    const row = ada.locator('tr[data-connector="e2e-news"]');
    await expect(row.locator(".source")).toHaveText("added in the browser");
    await expect(row).toHaveAttribute("data-status", "available");
    await expect(ada.locator('.saved-manifests li[data-manifest="e2e-news"]')).toHaveAttribute("data-state", "serving");
    await expect(ada.locator("body")).not.toContainText(KEY);

    // Bob's open menu shows it without a reload, and he fires through it.
    const added = menu.locator('[data-connector="e2e-news"]');
    await expect(added).toContainText("E2E news");
    await added.getByRole("menuitem", { name: "Fire through E2E news" }).click();
    await expect(news).toHaveAttribute("data-state", "found");
    const card = bob.locator('article.card:has(h2:text-is("Dunmore Textiles (demo)"))');
    await expect(card.getByRole("link", { name: /E2E story on Dunmore Textiles/ })).toBeVisible();
    // Its last day, hour by hour, on Ada's open inventory without a reload
    // (the charts read the figures again every 15 s): attempts by outcome,
    // and latency.
    const charts = ada.locator('tr[data-connector="e2e-news"] .charts');
    await expect(charts.locator("svg.hour-chart")).toHaveAttribute("aria-label", /1 in all/, { timeout: 20_000 });
    await expect(charts.locator("svg.hour-chart rect.bar-found")).toHaveCount(1);
    await expect(charts.locator("svg.latency-chart")).toHaveAttribute("aria-label", /latest hour p50 \d+ ms, p95 \d+ ms/);

    // Eve, in another workspace, does not see it.
    const eve = await signedIn("eve");
    await eve.goto("/inventory");
    await hydrated(eve);
    await expect(eve.locator('tr[data-connector="demo"]')).toBeVisible();
    await expect(eve.locator('tr[data-connector="e2e-news"]')).toHaveCount(0);

    // Removed by Ada: gone from her inventory at once.
    ada.once("dialog", (d) => d.accept());
    await ada.locator('.saved-manifests li[data-manifest="e2e-news"]').getByRole("button", { name: "Remove" }).click();
    await expect(row).toHaveCount(0);
  } finally {
    await provider.close();
  }
});

test("an admin switches a connector off and on for the workspace; the page follows live", async ({ signedIn }) => {
  const ada = await signedIn("ada");
  const bob = await signedIn("bob");
  // And Bob triaging in another tab: a chip names the connector it fires.
  const triage = await signedIn("bob");
  await openDemoSet(triage);
  const chip = triage.locator('article.card:has(h2:text-is("Kestrel Robotics (demo)")) [data-pack="linkedin"]');
  await expect(chip).toHaveAttribute("title", /through Demo data/);
  for (const page of [ada, bob]) {
    await page.goto("/inventory");
    await hydrated(page);
    await expect(page.locator("body")).toHaveAttribute("data-live", "true");
  }
  // Members see no admin buttons.
  await expect(bob.locator('tr[data-connector="hn-algolia"] button.switch')).toHaveCount(0);
  const hn = ada.locator('tr[data-connector="hn-algolia"]');
  await hn.getByRole("button", { name: "Disable" }).click();
  await expect(hn).toHaveAttribute("data-status", "disabled");
  await expect(bob.locator('tr[data-connector="hn-algolia"]')).toHaveAttribute("data-status", "disabled");
  await expect(bob.locator('tr[data-connector="hn-algolia"] .status')).toContainText("by ada@demo.test");
  // The audit trail says who did it.
  await hn.locator("details.audit summary").click();
  await expect(hn.locator(".audit-trail li").first()).toContainText("disabled");
  await expect(hn.locator(".audit-trail li").first()).toContainText("ada@demo.test");
  await hn.getByRole("button", { name: "Enable" }).click();
  await expect(bob.locator('tr[data-connector="hn-algolia"]')).toHaveAttribute("data-status", "available");
  // Switching off the only connector of the chip's chain shows on the open
  // triage view without a reload, and so does switching it back on.
  const demo = ada.locator('tr[data-connector="demo"]');
  await demo.getByRole("button", { name: "Disable" }).click();
  await expect(chip).toHaveAttribute("title", /No connector fires on a click now/);
  await demo.getByRole("button", { name: "Enable" }).click();
  await expect(chip).toHaveAttribute("title", /through Demo data/);
});
