import { request as playwrightRequest } from "@playwright/test";
import type { APIRequestContext } from "@playwright/test";
import { readFile } from "node:fs/promises";
import { test, expect, hydrated, authFile, localProvider } from "./fixtures";

// A priced connector and a bundle whose one pack goes through it, set up
// through the REST door as Ada's browser, over a provider on this machine.
const priced = (base: string) => `id = "e2e-paid"
display_name = "E2E paid"
short_label = "Paid"
capabilities = ["search.priced"]
cost_tier = "paid"
cost = { per_call = 0.25, unit = "USD" }

[request]
url = "${base}/search"
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

test("a budget is set on the inventory, the fan-out confirmation shows the estimate and what is left, and the spend page charts a fire and exports it", async ({ baseURL, signedIn }) => {
  let calls = 0;
  const provider = await localProvider((req, res) => {
    calls += 1;
    const query = new URL(req.url ?? "/", "http://localhost").searchParams.get("q") ?? "";
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ results: [{ url: `https://paid.example/${encodeURIComponent(query)}`, title: `Paid answer on ${query}` }] }));
  });
  const api = await playwrightRequest.newContext({
    baseURL,
    storageState: authFile("ada"),
    extraHTTPHeaders: { origin: baseURL! },
  });
  try {
    await ok(await api.post("/api/manifests", { headers: { "content-type": "application/toml" }, data: priced(provider.url) }), "manifest");
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
    await expect(ada.locator('tr[data-connector="e2e-paid"] .price')).toHaveText("0.25 USD a call (empty answers billed, errors billed)");
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
    await ada.getByRole("button", { name: "Augment this set →" }).click();
    const asked = ada.getByRole("dialog", { name: "Confirm the fan-out" });
    await expect(asked).toContainText("runs over 2 records");
    await expect(asked.locator('li[data-connector="e2e-paid"]')).toHaveText(
      "E2E paid (paid): up to 2 fires (about 2), 0.50 USD at worst, about 0.50 USD",
    );
    await expect(asked).toContainText("Budget for e2e-paid: 1.00 USD left (0.00 of 1.00 USD this month).");
    // Declined: nothing runs.
    await asked.getByRole("button", { name: "Not now" }).click();
    await expect(asked).toHaveCount(0);
    await expect(ada.locator("[data-job]")).toHaveCount(0);

    // One chip fired by hand is billed: the spend page charts it and its
    // CSV names it.
    const chip = ada.locator('article.card:has(h2:text-is("Alpha Mills")) [data-pack="priced"]');
    // Before: the chip says what a click costs and what the budget has left.
    await expect(chip).toHaveAttribute("title", /through E2E paid \(the pack's order; 0\.25 USD a click, 1\.00 USD left this month\)/);
    await expect(chip).not.toHaveAttribute("title", /today/);
    await chip.click();
    await expect(chip).toHaveAttribute("data-state", "found");
    // After: what this record has cost today, on the chip and in its menu.
    await expect(chip).toHaveAttribute("title", /This record has cost 0\.25 USD today\.$/);
    await chip.click({ button: "right" });
    const menu = ada.getByRole("menu", { name: "Connectors" });
    await expect(menu.locator('[data-connector="e2e-paid"] .menu-price')).toHaveText(/^0\.25 USD a click, \d\.\d\d USD left this month$/);
    await expect(menu.locator(".menu-spent")).toHaveText("This record has cost 0.25 USD today.");
    await ada.keyboard.press("Escape");
    await ada.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Spend" }).click();
    const usd = ada.locator('section.spend-unit[data-unit="USD"]');
    await expect(usd.locator("h2")).toContainText("0.25 USD");
    await expect(usd.getByRole("img", { name: "USD spent per day" }).locator("rect.bar[height]:not([height='0'])")).toHaveCount(1);
    await expect(usd.getByRole("img", { name: "USD spent by connector" })).toContainText("e2e-paid · 0.25 USD (1 attempts)");
    const download = ada.waitForEvent("download");
    await ada.getByRole("link", { name: "Every billed attempt as CSV" }).click();
    const file = await (await download).path();
    const csv = await readFile(file!, "utf8");
    expect(csv.split("\n")[0]).toBe("when,record_set,record,pack,capability,call,connector,outcome,cost,unit,paid_by,person,job");
    expect(csv).toContain(",Priced set,Alpha Mills,priced,search.priced,,e2e-paid,found,0.25,USD,server,ada@demo.test,");

    // A fan-out allowed no paid fire per record fires nothing paid.
    await ada.goto(setUrl);
    await expect(ada.locator("body")).toHaveAttribute("data-live", "true");
    await ada.getByRole("button", { name: "Augment this set →" }).click();
    await ada.getByLabel("At most").fill("0");
    await ada.getByRole("button", { name: "Start the fan-out" }).click();
    const job = ada.locator("[data-job]");
    await expect(job).toHaveAttribute("data-job-status", "completed", { timeout: 20_000 });
    await expect(job).toContainText("at most 0 paid fires per record");
    expect(calls).toBe(1);

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
    await provider.close();
  }
});

test("past a record's daily cap the chip asks \"spend more?\", and a yes fires past it", async ({ baseURL, signedIn }) => {
  let calls = 0;
  // The provider finds nothing (billed all the same), so each click fires again.
  const provider = await localProvider((_req, res) => {
    calls += 1;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ results: [] }));
  });
  const api = await playwrightRequest.newContext({
    baseURL,
    storageState: authFile("ada"),
    extraHTTPHeaders: { origin: baseURL! },
  });
  const manifest = priced(provider.url).replace('id = "e2e-paid"', 'id = "e2e-capped"').replace("search.priced", "search.capped");
  try {
    await ok(await api.post("/api/manifests", { headers: { "content-type": "application/toml" }, data: manifest }), "manifest");
    await ok(
      await api.put("/api/packs/capped", {
        data: { pack_id: "capped", display_name: "Capped", short_label: "cp", intent: "search.capped", preferred_connectors: ["e2e-capped"] },
      }),
      "pack",
    );
    await ok(await api.put("/api/bundles/capped", { data: { bundle_id: "capped", display_name: "Capped", members: [{ pack: "capped" }] } }), "bundle");
    const imported = await ok(
      await api.post("/api/record-sets?name=Capped%20set&bundle=capped", { headers: { "content-type": "text/csv" }, data: "name\nGamma Foods\n" }),
      "import",
    );
    const setUrl = `/record-sets/${((await imported.json()) as { id: number }).id}`;

    // Ada caps what one record may cost a day on the inventory.
    const ada = await signedIn("ada");
    await ada.goto("/inventory");
    await hydrated(ada);
    const form = ada.locator("form.set-record-cap");
    await form.getByLabel("Unit").fill("USD");
    await form.getByLabel("Per record per day").fill("0.3");
    await form.getByRole("button", { name: "Set cap" }).click();
    await expect(ada.locator('tr[data-record-cap="USD"]')).toContainText("0.30 USD per record a day");

    await ada.goto(setUrl);
    await expect(ada.locator("body")).toHaveAttribute("data-live", "true");
    const card = ada.locator('article.card:has(h2:text-is("Gamma Foods"))');
    const chip = card.locator('[data-pack="capped"]');
    await chip.click();
    await expect(chip).toHaveAttribute("data-state", "not_found");
    expect(calls).toBe(1);
    // A second click would take the record to 0.50 USD: it asks instead.
    await chip.click();
    const question = card.getByRole("group", { name: "Spend more on this record?" });
    await expect(question).toContainText("This record has cost 0.25 USD today (its cap is 0.30 USD a day); spend 0.25 USD more?");
    expect(calls).toBe(1);
    await question.getByRole("button", { name: "Spend 0.25 USD" }).click();
    await expect(question).toHaveCount(0);
    await expect(chip).toHaveAttribute("title", /This record has cost 0\.50 USD today\.$/);
    expect(calls).toBe(2);
    // Not now puts the question away without firing.
    await chip.click();
    await expect(question).toBeVisible();
    await question.getByRole("button", { name: "Not now" }).click();
    await expect(question).toHaveCount(0);
    expect(calls).toBe(2);
  } finally {
    await api.delete("/api/record-caps?unit=USD");
    await api.delete("/api/bundles/capped");
    await api.delete("/api/packs/capped");
    await api.delete("/api/manifests/e2e-capped");
    await api.dispose();
    await provider.close();
  }
});

test("an admin schedules a pack of a set to refresh by itself and removes it; a member only reads it", async ({ signedIn }) => {
  const ada = await signedIn("ada");
  await ada.goto("/record-sets");
  await hydrated(ada);
  const row = ada.locator("tr[data-record-set]").filter({ hasText: "Demo companies" });
  await row.locator("details.refresh summary").click();
  const form = row.locator("form.set-refresh");
  await form.getByRole("combobox").selectOption("linkedin");
  await form.getByLabel("Every").fill("7");
  // A window half a day from now: inside it, the schedule would fire the
  // demo set's LinkedIn chips while the test runs (other tests expect them
  // idle).
  const from = Math.min((new Date().getUTCHours() + 12) % 24, 22);
  const hour = (h: number) => `${String(h).padStart(2, "0")}:00`;
  await form.getByLabel("From").fill(String(from));
  await form.getByLabel("to").fill(String(from + 1));
  await form.getByRole("button", { name: "Schedule" }).click();
  const schedule = row.locator('.schedules li[data-pack="linkedin"]');
  await expect(schedule).toContainText(`every 7 days, ${hour(from)}-${hour(from + 1)} UTC`);
  await expect(schedule).toContainText("not run yet");

  const bob = await signedIn("bob");
  await bob.goto("/record-sets");
  await hydrated(bob);
  const his = bob.locator("tr[data-record-set]").filter({ hasText: "Demo companies" });
  await his.locator("details.refresh summary").click();
  await expect(his.locator('.schedules li[data-pack="linkedin"]')).toContainText("every 7 days");
  await expect(his.locator("form.set-refresh")).toHaveCount(0);
  await expect(his.getByRole("button", { name: "Remove" })).toHaveCount(0);

  await schedule.getByRole("button", { name: "Remove" }).click();
  await expect(schedule).toHaveCount(0);
  await expect(row.getByRole("status")).toContainText("linkedin is no longer refreshed.");
});
