import { request as playwrightRequest } from "@playwright/test";
import { test, expect, authFile } from "./fixtures";

// Big sets at a glance: a 10,000-record set in the compact view, one line
// per record drawn only where the person looks, scrolled to its end; the
// facets count what is left and follow a fire live. On a set of its own.
test("the compact view of a 10,000-record set scrolls to the end and its facets follow a fire", async ({ baseURL, signedIn }) => {
  const api = await playwrightRequest.newContext({ baseURL, storageState: authFile("ada"), extraHTTPHeaders: { origin: baseURL! } });
  const rows = Array.from({ length: 10_000 }, (_, i) => `Glance ${String(i + 1).padStart(5, "0")},https://g${i + 1}.example`);
  const imported = await api.post("/api/record-sets?name=Ten%20thousand&bundle=social-profiles", {
    headers: { "content-type": "text/csv" },
    data: `name,website\n${rows.join("\n")}\n`,
  });
  expect(imported.ok(), await imported.text()).toBeTruthy();
  const setId = ((await imported.json()) as { id: number }).id;

  const page = await signedIn("ada");
  await page.goto(`/record-sets/${setId}?view=compact`);
  await expect(page.locator("body")).toHaveAttribute("data-live", "true");
  const list = page.getByLabel("Records, one per line");
  await expect(list.locator(".line[data-at='0']")).toContainText("Glance 00001");
  // Only what is in view is drawn.
  const drawn = await list.locator(".line").count();
  expect(drawn).toBeLessThan(200);
  const facets = page.getByRole("region", { name: "Facets" });
  await expect(facets).toContainText("10000 records · 0 items to triage · 0 triaged");

  // To the end, as a person dragging the scroll bar.
  await list.evaluate((el) => el.scrollTo(0, el.scrollHeight));
  await expect(list.locator(".line[data-at='9999']")).toContainText("Glance 10000");
  expect(await list.locator(".line").count()).toBeLessThan(200);

  // A fire on the last record reaches its line and the facets live.
  const last = (await (await api.get(`/api/record-sets/${setId}/records?offset=9999&limit=1`)).json()) as {
    records: { id: number }[];
  };
  const fired = await api.post(`/api/records/${last.records[0].id}/fire`, { data: { pack: "news" } });
  expect(fired.ok(), await fired.text()).toBeTruthy();
  await api.dispose();
  // The demo connector finds one news item for this name.
  const chip = list.locator(".line[data-at='9999'] .mini-chip").nth(2);
  await expect(chip).toHaveAttribute("data-state", "found", { timeout: 5_000 });
  await expect(facets.locator("li[data-pack='news']")).toContainText("found 1 · idle 9999");

  // The facet of records with something to triage shows that one line.
  const unreviewed = facets.locator("button[data-filter='unreviewed']");
  await expect(unreviewed).toHaveText("has unreviewed 1");
  await unreviewed.click();
  await expect(page.locator(".compact-count")).toHaveText("1 record");
  const line = list.locator(".line[data-at='0']");
  await expect(line).toContainText("Glance 10000");
  await expect(list.locator(".line")).toHaveCount(1);

  // One click accepts its best candidate; the facets follow.
  await line.getByRole("button", { name: /^Accept .* for Glance 10000$/ }).click();
  await expect(line.locator(".best")).toHaveAttribute("data-triage", "accepted-canonical");
  await expect(unreviewed).toHaveText("has unreviewed 0");
  await expect(facets).toContainText("0 items to triage · 1 triaged");

  // Decided, it has left this facet; searched for among all, its name
  // opens its card.
  await expect(page.locator(".compact-count")).toHaveText("0 records");
  await facets.locator("button[data-filter='all']").click();
  await page.getByLabel("Search by name").fill("Glance 10000");
  await page.getByLabel("Search by name").press("Enter");
  await expect(page.locator(".compact-count")).toHaveText("1 record");
  await line.getByRole("link", { name: "Glance 10000", exact: true }).click();
  await expect(page).toHaveURL(/\?q=Glance%2010000$/);
  await expect(page.getByLabel("Search by name")).toHaveValue("Glance 10000");
  const card = page.locator("article.card");
  await expect(card).toHaveCount(1);
  await expect(card.locator("li.item").first()).toHaveAttribute("data-triage", "accepted-canonical");
});
