import { request as playwrightRequest } from "@playwright/test";
import { test, expect, authFile } from "./fixtures";

// Triage without a mouse: every decision on a found item from the keyboard,
// listed in the help, told to screen readers, with the focus kept on the
// item. On a set of its own, so other tests' demo records stay as they are.
test("a person triages a record's items with keys only, and keeps their place through someone else's change", async ({ baseURL, signedIn }) => {
  const api = await playwrightRequest.newContext({ baseURL, storageState: authFile("ada"), extraHTTPHeaders: { origin: baseURL! } });
  const imported = await api.post("/api/record-sets?name=Keyboard%20set&bundle=social-profiles", {
    headers: { "content-type": "text/csv" },
    data: "name,website\nKeyboard Co,https://keyboard.example\n",
  });
  expect(imported.ok(), await imported.text()).toBeTruthy();
  const setUrl = `/record-sets/${((await imported.json()) as { id: number }).id}`;
  await api.dispose();

  const page = await signedIn("ada");
  await page.goto(setUrl);
  await expect(page.locator("body")).toHaveAttribute("data-live", "true");
  await page.keyboard.press("?");
  const help = page.getByRole("dialog", { name: "Keyboard shortcuts" });
  for (const line of ["accept the item", "accept the item as context", "discard the item", "undo the item's decision"]) {
    await expect(help).toContainText(line);
  }
  await page.keyboard.press("Escape");
  await page.keyboard.press("j");
  const card = page.locator("article.card").first();
  await expect(card).toBeFocused();
  // Fire LinkedIn by its label; the demo connector finds something.
  await page.keyboard.type("in");
  const items = card.locator("li.item");
  await expect(items.first()).toBeVisible({ timeout: 15_000 });

  await page.keyboard.press("ArrowDown");
  const first = items.first();
  await expect(first).toBeFocused();
  const id = await first.getAttribute("data-item");
  const item = card.locator(`li.item[data-item="${id}"]`);
  const said = page.locator('p.sr[role="status"]');

  await page.keyboard.press("Enter");
  await expect(item).toHaveAttribute("data-triage", "accepted-canonical");
  // Drawn again with its new state, it still has the focus.
  await expect(item).toBeFocused();
  await expect(said).toContainText("accepted (canonical)");

  await page.keyboard.press("Control+z");
  await expect(item).toHaveAttribute("data-triage", "new");
  await expect(item).toBeFocused();

  await page.keyboard.press("Shift+Enter");
  await expect(item).toHaveAttribute("data-triage", "accepted-context");
  await expect(item).toBeFocused();

  await page.keyboard.press("Delete");
  await expect(item).toHaveAttribute("data-triage", "discarded");
  await expect(said).toContainText("discarded");
  await expect(item).toBeFocused();

  // Bob takes the decision back from his own page: Ada's item is drawn
  // again, and she is still on it.
  const bob = await signedIn("bob");
  await bob.goto(setUrl);
  await expect(bob.locator("body")).toHaveAttribute("data-live", "true");
  await bob.locator(`li.item[data-item="${id}"]`).getByRole("button", { name: "Undo" }).click();
  // Undo takes the last decision back: the item is accepted as context again.
  await expect(item).toHaveAttribute("data-triage", "accepted-context", { timeout: 2_000 });
  await expect(item).toBeFocused();

  // Escape goes back to the record.
  await page.keyboard.press("Escape");
  await expect(card).toBeFocused();
});
