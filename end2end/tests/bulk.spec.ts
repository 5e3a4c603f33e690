import { request as playwrightRequest } from "@playwright/test";
import { test, expect, authFile } from "./fixtures";

// Decisions in bulk from the page: a selection, a preview of what it takes,
// one decision on all of it that skips (and names) the item someone else
// decided on meanwhile, and one undo. On a set of its own.
test("a bulk accept previews, skips what another person decided meanwhile, and undoes as one step", async ({ baseURL, signedIn }) => {
  const asUser = (name: string) =>
    playwrightRequest.newContext({ baseURL, storageState: authFile(name), extraHTTPHeaders: { origin: baseURL! } });
  const ada = await asUser("ada");
  const names = Array.from({ length: 12 }, (_, i) => `Bulk Co ${i + 1}`);
  const imported = await ada.post("/api/record-sets?name=Bulk%20set&bundle=social-profiles", {
    headers: { "content-type": "text/csv" },
    data: `name\n${names.join("\n")}\n`,
  });
  expect(imported.ok(), await imported.text()).toBeTruthy();
  const setId = ((await imported.json()) as { id: number }).id;
  const records = (await (await ada.get(`/api/record-sets/${setId}/records?limit=100`)).json()) as {
    records: { id: number }[];
  };
  // The demo connector finds one item for some of these names, more or
  // none for others.
  await Promise.all(
    records.records.map((r) => ada.post(`/api/records/${r.id}/fire`, { data: { pack: "linkedin" } })),
  );
  await ada.dispose();

  const page = await signedIn("ada");
  await page.goto(`/record-sets/${setId}`);
  await expect(page.locator("body")).toHaveAttribute("data-live", "true");
  await page.getByRole("button", { name: "Decide in bulk…" }).click();
  const dialog = page.getByRole("dialog", { name: "Decide in bulk" });
  const which = dialog.getByLabel("Which items");
  await expect(which.locator('option[value="single:demo"]')).toHaveCount(1);
  await which.selectOption("single:demo");
  await dialog.getByRole("button", { name: "Preview" }).click();
  const preview = dialog.locator(".bulk-preview");
  await expect(preview).toBeVisible();
  const count = Number(await preview.getAttribute("data-count"));
  expect(count).toBeGreaterThan(1);
  const listed = await preview.locator("li[data-item]").evaluateAll((lis) =>
    lis.map((li) => Number(li.getAttribute("data-item"))),
  );
  expect(listed).toHaveLength(count);

  // Bob discards the first of them from his side after Ada's preview.
  const bob = await asUser("bob");
  const first = listed[0];
  const bobsPreview = (await (
    await bob.post(`/api/record-sets/${setId}/bulk-triage/preview`, {
      data: { selection: { kind: "single_from", connector_id: "demo" }, verb: "discard" },
    })
  ).json()) as { items: { item_id: number; version: number }[] };
  const his = bobsPreview.items.find((i) => i.item_id === first)!;
  const discarded = await bob.post(`/api/items/${first}/triage`, { data: { verb: "discard", version: his.version } });
  expect(discarded.ok(), await discarded.text()).toBeTruthy();
  await bob.dispose();
  // Ada's page hears it.
  await expect(page.locator(`li.item[data-item="${first}"]`)).toHaveAttribute("data-triage", "discarded");

  await preview.getByRole("button", { name: `Accept all ${count}` }).click();
  const outcome = dialog.locator(".bulk-outcome");
  await expect(outcome.getByRole("status")).toHaveText(
    `Accepted ${count - 1} item${count - 1 === 1 ? "" : "s"}; 1 skipped (someone decided first).`,
  );
  await expect(outcome.locator(`.skipped li[data-item="${first}"]`)).toContainText("discarded by bob@demo.test");
  for (const id of listed.slice(1)) {
    await expect(page.locator(`li.item[data-item="${id}"]`)).toHaveAttribute("data-triage", "accepted-canonical");
  }

  await outcome.getByRole("button", { name: "Undo this bulk decision" }).click();
  await expect(outcome.getByRole("status")).toContainText(`Undone. Took back ${count - 1} item`);
  for (const id of listed.slice(1)) {
    await expect(page.locator(`li.item[data-item="${id}"]`)).toHaveAttribute("data-triage", "new");
  }
  // Bob's decision stays his.
  await expect(page.locator(`li.item[data-item="${first}"]`)).toHaveAttribute("data-triage", "discarded");
});
