import { request as playwrightRequest } from "@playwright/test";
import type { APIRequestContext } from "@playwright/test";
import { test, expect, hydrated, authFile } from "./fixtures";

// A priced connector and a bundle whose one pack goes through it, set up
// through the REST door as Ada's browser; the connector is never fired here.
const PRICED = `id = "e2e-paid"
display_name = "E2E paid"
short_label = "Paid"
capabilities = ["search.priced"]
cost_tier = "paid"
cost = { per_call = 0.25, unit = "USD" }

[request]
url = "https://paid.example.org/search"
query = { q = "{{query}}" }

[response]
items = "$.results[*]"
url = "$.url"
title = "$.title"
`;

async function ok(res: Awaited<ReturnType<APIRequestContext["put"]>>, what: string) {
  expect(res.ok(), `${what}: ${res.status()} ${await res.text()}`).toBeTruthy();
  return res;
}

test("a budget is set on the inventory and the fan-out confirmation shows the estimate and what is left", async ({ baseURL, signedIn }) => {
  const api = await playwrightRequest.newContext({
    baseURL,
    storageState: authFile("ada"),
    extraHTTPHeaders: { origin: baseURL! },
  });
  try {
    await ok(await api.post("/api/manifests", { headers: { "content-type": "application/toml" }, data: PRICED }), "manifest");
    await ok(
      await api.put("/api/packs/priced", {
        data: { pack_id: "priced", display_name: "Priced", short_label: "pr", intent: "search.priced", preferred_connectors: ["e2e-paid"] },
      }),
      "pack",
    );
    await ok(await api.put("/api/bundles/priced", { data: { bundle_id: "priced", display_name: "Priced", members: [{ pack: "priced" }] } }), "bundle");
    const imported = await ok(
      await api.post("/api/record-sets?name=Priced%20set&bundle=priced", {
        headers: { "content-type": "text/csv" },
        data: "name\nAlpha Mills\nBeta Works\n",
      }),
      "import",
    );
    const setUrl = `/record-sets/${((await imported.json()) as { id: number }).id}`;

    // The inventory shows its price; Ada gives it a budget in that unit.
    const ada = await signedIn("ada");
    await ada.goto("/inventory");
    await hydrated(ada);
    await expect(ada.locator('tr[data-connector="e2e-paid"] .price')).toHaveText("0.25 USD a call (empty answers billed)");
    const form = ada.locator("form.set-budget");
    await form.getByLabel("What the budget covers").selectOption("e2e-paid");
    await form.getByLabel("Monthly limit").fill("1");
    await form.getByRole("button", { name: "Set budget" }).click();
    const budget = ada.locator('tr[data-budget="e2e-paid"]');
    await expect(budget).toContainText("0.00 of 1.00 USD this month");
    await expect(budget).toHaveAttribute("data-state", "ok");

    // A fan-out that may reach it says what it may cost, and asks.
    await ada.goto(setUrl);
    await expect(ada.locator("body")).toHaveAttribute("data-live", "true");
    const asked = new Promise<string>((resolve) =>
      ada.once("dialog", (d) => {
        resolve(d.message());
        void d.dismiss();
      }),
    );
    await ada.getByRole("button", { name: "Augment this set →" }).click();
    const message = await asked;
    expect(message).toContain("runs over 2 records");
    expect(message).toContain("E2E paid (paid): up to 2 fires (about 2), 0.50 USD at worst, about 0.50 USD");
    expect(message).toContain("Budget for e2e-paid: 1.00 USD left (0.00 of 1.00 USD this month).");
    // Declined: nothing runs.
    await expect(ada.locator("[data-job]")).toHaveCount(0);

    // Removed on the inventory.
    await ada.goto("/inventory");
    await hydrated(ada);
    await budget.getByRole("button", { name: "Remove" }).click();
    await expect(budget).toHaveCount(0);
  } finally {
    await api.delete("/api/budgets?connector_id=e2e-paid&unit=USD");
    await api.delete("/api/bundles/priced");
    await api.delete("/api/packs/priced");
    await api.delete("/api/manifests/e2e-paid");
    await api.dispose();
  }
});
