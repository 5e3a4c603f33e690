import { test, expect, hydrated, openDemoSet } from "./fixtures";

test("an admin makes a pack and puts it in a bundle; an open triage view gets the chip", async ({ signedIn }) => {
  // Bob is triaging the demo set: three chips per card.
  const bob = await signedIn("bob");
  await openDemoSet(bob);
  const card = bob.locator('article.card:has(h2:text-is("Fjord Freight (demo)"))');
  await expect(card.locator("[data-pack]")).toHaveCount(3);

  const ada = await signedIn("ada");
  await ada.goto("/packs");
  await hydrated(ada);
  await expect(ada.locator('tr[data-pack="facebook"]')).toHaveAttribute("data-origin", "shipped");
  const pack = ada.locator("form.pack-editor");
  await pack.getByLabel("Id", { exact: true }).fill("scholar-e2e");
  await pack.getByLabel("Name", { exact: true }).fill("Papers");
  await pack.getByLabel("Intent").fill("search.scholar");
  // A label another pack has is refused, naming that pack.
  await pack.getByLabel("Short label").fill("f");
  await pack.getByLabel("Add to the chain").selectOption("demo");
  await expect(pack.locator("ol.chain li")).toHaveCount(1);
  await pack.getByRole("button", { name: "Save pack" }).click();
  await expect(ada.locator(".error")).toContainText('"facebook"');
  await pack.getByLabel("Short label").fill("sc");
  await pack.getByRole("button", { name: "Save pack" }).click();
  await expect(ada.locator(".notice")).toContainText("Saved the pack Papers (sc)");
  await expect(ada.locator('tr[data-pack="scholar-e2e"]')).toHaveAttribute("data-origin", "this workspace");

  // Into the demo set's bundle, last.
  await ada.locator('tr[data-bundle="social-profiles"]').getByRole("button", { name: "Edit" }).click();
  const bundle = ada.locator("form.bundle-editor");
  await expect(bundle.locator("ol.bundle li")).toHaveCount(3);
  await bundle.getByLabel("Add to the bundle").selectOption("scholar-e2e");
  await bundle.getByRole("button", { name: "Move Papers (sc) up" }).click();
  await expect(bundle.locator("ol.bundle li").nth(2)).toHaveAttribute("data-id", "scholar-e2e");
  await bundle.getByRole("button", { name: "Save bundle" }).click();
  await expect(ada.locator('tr[data-bundle="social-profiles"]')).toHaveAttribute("data-origin", "changed here");
  await expect(ada.locator('tr[data-bundle="social-profiles"] .members')).toHaveText("f · in · sc · gn");

  // Bob's open view gets the chip, in its place, without a reload; it fires.
  const papers = card.locator('[data-pack="scholar-e2e"]');
  await expect(card.locator("[data-pack]")).toHaveCount(4);
  await expect(card.locator("[data-pack]").nth(2)).toHaveAttribute("data-pack", "scholar-e2e");
  await papers.click();
  await expect(papers).toHaveAttribute("data-state", "found");

  // The bundle sets its own chain for the new chip (started from the
  // pack's), and editing the bundle again keeps it.
  const members = ada.locator('tr[data-bundle="social-profiles"] .members');
  await ada.locator('tr[data-bundle="social-profiles"]').getByRole("button", { name: "Edit" }).click();
  const chain = bundle.locator('.member-chain[data-pack="scholar-e2e"]');
  await expect(chain).toHaveAttribute("data-overridden", "false");
  await chain.getByRole("button", { name: "Set a chain for Papers (sc) in this bundle" }).click();
  await expect(chain).toHaveAttribute("data-overridden", "true");
  await expect(chain.locator("ol li")).toHaveCount(1);
  await bundle.getByRole("button", { name: "Save bundle" }).click();
  await expect(members).toHaveText("f · in · sc (demo) · gn");
  await ada.locator('tr[data-bundle="social-profiles"]').getByRole("button", { name: "Edit" }).click();
  await expect(chain).toHaveAttribute("data-overridden", "true");
  await bundle.getByRole("button", { name: "Move News (gn) up" }).click();
  await bundle.getByRole("button", { name: "Save bundle" }).click();
  await expect(members).toHaveText("f · in · gn · sc (demo)");

  // Reverting the bundle and removing the pack put things back.
  await ada.locator('tr[data-bundle="social-profiles"]').getByRole("button", { name: "Revert" }).click();
  await expect(ada.locator('tr[data-bundle="social-profiles"]')).toHaveAttribute("data-origin", "shipped");
  await ada.locator('tr[data-pack="scholar-e2e"]').getByRole("button", { name: "Remove" }).click();
  await expect(ada.locator('tr[data-pack="scholar-e2e"]')).toHaveCount(0);
  await expect(card.locator("[data-pack]")).toHaveCount(3);
});
