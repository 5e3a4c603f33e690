import { test, expect, hydrated, authFile, openDemoSet, PASSWORD, chip } from "./fixtures";

// The demo record set (made-up companies) and the demo connector, offline.


test("a chip click fires, shows firing, then found with its count and the items", async ({ page }) => {
  await openDemoSet(page);
  const linkedin = chip(page, "Acme Rocketry (demo)", "linkedin");
  await expect(linkedin).toHaveAttribute("data-state", "idle");
  await expect(linkedin).toHaveAttribute("title", /Fire LinkedIn through Demo data \(offline\)/);
  await linkedin.click();
  await expect(linkedin).toHaveAttribute("data-state", "firing");
  await expect(linkedin).toHaveAttribute("data-state", "found");
  await expect(linkedin).toHaveAttribute("data-count", "1");
  await expect(linkedin).toHaveAttribute("aria-label", "LinkedIn: found 1");
  const card = page.locator('article.card:has(h2:text-is("Acme Rocketry (demo)"))');
  const link = card.getByRole("link", { name: /LinkedIn result 1 \(demo data\)/ });
  await expect(link).toHaveAttribute("target", "_blank");
  await expect(link).toHaveAttribute("rel", /noopener/);
  await expect(card.locator(".badge.demo")).toBeVisible();
});

test("the connector menu fires through a named connector and triage verbs stick", async ({ page }) => {
  await openDemoSet(page);
  const facebook = chip(page, "Cobalt Analytics (demo)", "facebook");
  await facebook.click({ button: "right" });
  const menu = page.getByRole("menu", { name: "Connectors" });
  await expect(menu).toBeVisible();
  // Every connector serving the intent, one line each with its cost and
  // status; the first that can fire has the focus.
  const demo = menu.locator('[data-connector="demo"]');
  const fireDemo = demo.getByRole("menuitem", { name: "Fire through Demo data (offline)" });
  await expect(fireDemo).toBeFocused();
  await expect(demo).toContainText("Demo data (offline)");
  await expect(demo.locator(".cost")).toHaveText(/free/);
  await expect(demo).toContainText("not fired for this record");
  const serpapi = menu.locator('[data-connector="serpapi"]');
  await expect(serpapi).toContainText("needs SERPAPI_API_KEY");
  await expect(serpapi.getByRole("menuitem", { name: /^Fire through/ })).toBeDisabled();
  await expect(serpapi.locator(".cost")).toHaveText(/paid/);
  // Anchored under its chip, and compact: a line per connector.
  const chipBox = (await facebook.boundingBox())!;
  const menuBox = (await menu.boundingBox())!;
  expect(menuBox.y).toBeGreaterThanOrEqual(chipBox.y + chipBox.height - 1);
  expect(menuBox.y).toBeLessThan(chipBox.y + chipBox.height + 20);
  expect((await demo.boundingBox())!.height).toBeLessThan(48);
  // The keyboard reaches the secondary action; Escape gives the chip its focus back.
  await page.keyboard.press("ArrowDown");
  await expect(demo.getByRole("menuitemcheckbox", { name: "Always start with Demo data (offline) for this record" })).toBeFocused();
  await page.keyboard.press("Escape");
  await expect(menu).toBeHidden();
  await expect(facebook).toBeFocused();

  await facebook.click({ button: "right" });
  await expect(fireDemo).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(menu).toBeHidden();
  await expect(facebook).not.toHaveAttribute("data-state", "idle");
  await expect(facebook).not.toHaveAttribute("data-state", "firing");

  // The menu now remembers the fire; the star makes the record start there.
  await facebook.click({ button: "right" });
  await expect(demo).toContainText(/fired (just now|\d+ min ago) — /);
  await demo.getByRole("menuitemcheckbox", { name: /Always start with Demo data/ }).click();
  await expect(menu).toBeHidden();
  await facebook.click({ button: "right" });
  await expect(demo.getByRole("menuitemcheckbox", { name: /Stop always starting with Demo data/ })).toHaveAttribute("aria-checked", "true");
  await demo.getByRole("menuitemcheckbox", { name: /Stop always starting with Demo data/ }).click();
  await expect(menu).toBeHidden();

  // Triage the first item found anywhere on the page, if the demo found one.
  const linkedin = chip(page, "Acme Rocketry (demo)", "linkedin");
  await linkedin.click();
  await expect(linkedin).toHaveAttribute("data-state", "found");
  const item = page.locator('article.card:has(h2:text-is("Acme Rocketry (demo)")) li.item').first();
  await expect(item).toHaveAttribute("data-triage", "new");
  await item.getByRole("button", { name: "Accept" }).click();
  await expect(item).toHaveAttribute("data-triage", "accepted-canonical");
  await expect(item).toContainText("by ada@demo.test");
  await item.getByRole("button", { name: "Undo" }).click();
  await expect(item).toHaveAttribute("data-triage", "new");
});

test("two people of one workspace see each other, their chips and their triage live", async ({ browser, baseURL }) => {
  const ada = await (await browser.newContext({ baseURL, storageState: authFile("ada") })).newPage();
  const bob = await (await browser.newContext({ baseURL, storageState: authFile("bob") })).newPage();
  await openDemoSet(ada);
  await openDemoSet(bob);
  // Each sees who else is here.
  await expect(ada.locator(".viewers")).toHaveAttribute("data-viewers", "ada@demo.test bob@demo.test");
  await expect(bob.locator(".viewers")).toContainText("ada@demo.test");

  const mine = chip(ada, "Granite Legal (demo)", "news");
  const theirs = chip(bob, "Granite Legal (demo)", "news");
  await expect(theirs).toHaveAttribute("data-state", "idle");
  await mine.click();
  await expect(theirs).toHaveAttribute("data-state", "firing", { timeout: 1_000 });
  await expect(mine).not.toHaveAttribute("data-state", "firing");
  const settled = await mine.getAttribute("data-state");
  await expect(theirs).toHaveAttribute("data-state", settled!, { timeout: 1_000 });
  // ...and who did it.
  await expect(bob.locator(".activity")).toContainText("ada@demo.test", { timeout: 1_000 });

  // Bob triages; Ada sees the verb and his name within a second.
  const bobsChip = chip(bob, "Acme Rocketry (demo)", "linkedin");
  await bobsChip.click();
  await expect(bobsChip).toHaveAttribute("data-state", "found");
  const bobsItem = bob.locator('article.card:has(h2:text-is("Acme Rocketry (demo)")) li.item').first();
  const adasItem = ada.locator('article.card:has(h2:text-is("Acme Rocketry (demo)")) li.item').first();
  await expect(adasItem).toHaveAttribute("data-triage", "new", { timeout: 1_000 });
  await bobsItem.getByRole("button", { name: "Accept" }).click();
  await expect(adasItem).toHaveAttribute("data-triage", "accepted-canonical", { timeout: 1_000 });
  await expect(adasItem).toContainText("by bob@demo.test");
  await expect(ada.locator(".activity")).toContainText("bob@demo.test");

  // When Bob leaves, Ada sees him go.
  await bob.context().close();
  await expect(ada.locator(".viewers")).toHaveAttribute("data-viewers", "ada@demo.test");
});

test("a menu whose code cannot be fetched says so, and opens at the next try", async ({ page, pageErrors }) => {
  await page.route(/\/split_menu_lines\.wasm$/, (route) => route.abort("internetdisconnected"));
  await openDemoSet(page);
  const facebook = chip(page, "Cobalt Analytics (demo)", "facebook");
  await facebook.click({ button: "right" });
  const menu = page.getByRole("menu", { name: "Connectors" });
  await expect(menu.getByRole("alert")).toHaveText(/could not be loaded/);
  await page.keyboard.press("Escape");
  await expect(menu).toBeHidden();
  // The page lives on (a panic would have stopped it): the network is back.
  await page.unroute(/\/split_menu_lines\.wasm$/);
  await facebook.click({ button: "right" });
  await expect(menu.getByRole("menuitem", { name: "Fire through Demo data (offline)" })).toBeVisible();
  await page.keyboard.press("Escape");
  await expect(facebook).toBeFocused();
  // The failed fetch is logged, by the browser and by the loader; nothing
  // else is (a panic would be).
  const failedFetch = (e: string) => e.includes("split_menu_lines.wasm") || e.startsWith("TypeError: Failed to fetch");
  expect(pageErrors.filter(failedFetch).length).toBeGreaterThan(0);
  pageErrors.splice(0, pageErrors.length, ...pageErrors.filter((e) => !failedFetch(e)));
});

test("events heard before the stream's reader has loaded are kept and applied in order", async ({ browser, baseURL }) => {
  const ada = await (await browser.newContext({ baseURL, storageState: authFile("ada") })).newPage();
  const bob = await (await browser.newContext({ baseURL, storageState: authFile("bob") })).newPage();
  // Ada's browser gets the chunk that reads events only when the test says.
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  await ada.route(/\/split_live_events\.wasm$/, async (route) => {
    await released;
    await route.continue();
  });
  await openDemoSet(ada);
  await openDemoSet(bob);
  await expect(ada.locator("body")).toHaveAttribute("data-live", "true");

  const theirs = chip(bob, "Fjord Freight (demo)", "linkedin");
  await theirs.click();
  await expect(theirs).not.toHaveAttribute("data-state", "firing");
  const settled = await theirs.getAttribute("data-state");
  // Started, firing, attempt ended, settled: all heard, none read yet.
  await expect(ada.locator(".activity")).not.toContainText("bob@demo.test");
  release();
  // Read in the order they came: the chip ends as Bob's did, not firing.
  await expect(ada.locator(".activity")).toContainText("bob@demo.test");
  await expect(chip(ada, "Fjord Freight (demo)", "linkedin")).toHaveAttribute("data-state", settled!);
  await ada.context().close();
  await bob.context().close();
});

test("someone from another workspace sees nothing of it", async ({ browser, baseURL }) => {
  const ada = await (await browser.newContext({ baseURL, storageState: authFile("ada") })).newPage();
  await openDemoSet(ada);
  const demoSet = ada.url();
  const eve = await (await browser.newContext({ baseURL, storageState: authFile("eve") })).newPage();
  await eve.goto("/record-sets");
  await hydrated(eve);
  await expect(eve.locator(".account .who")).toHaveText("eve@other.test");
  await expect(eve.getByRole("link", { name: "Demo companies (made-up data)" })).toHaveCount(0);
  // Even the address of Ada's set shows nothing but that it does not exist
  // (the words of every door), without the wire's "ServerError|".
  await eve.goto(demoSet);
  await expect(eve.getByRole("alert")).toContainText(/record set \d+ does not exist/);
  await expect(eve.getByRole("alert")).not.toContainText("ServerError");
  await expect(eve.locator("article.card")).toHaveCount(0);
  const api = await eve.request.get(demoSet.replace("/record-sets/", "/api/record-sets/") + "/records");
  expect(api.status()).toBe(404);
  // Ada's fire does not reach Eve's event stream either (the API tests prove
  // the stream; here the page simply has nothing to show).
  await chip(ada, "Cobalt Analytics (demo)", "news").click();
  await expect(eve.locator("article.card")).toHaveCount(0);
});

test("signing in and out, and the way back to the page asked for", async ({ browser, baseURL }) => {
  const page = await (await browser.newContext({ baseURL, storageState: undefined })).newPage();
  await page.goto("/inventory");
  await expect(page).toHaveURL(/\/sign-in\?next=%2Finventory|\/sign-in\?next=\/inventory/);
  await hydrated(page);
  await page.getByLabel("Email").fill("bob@demo.test");
  await page.getByLabel("Password").fill("not the password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert")).toHaveText("Wrong email or password.");
  await page.getByLabel("Email").fill("bob@demo.test");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/inventory$/);
  await expect(page.locator(".account .who")).toHaveText("bob@demo.test");
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("alert")).toHaveText("You are signed out.");
  await page.goto("/record-sets");
  await expect(page).toHaveURL(/\/sign-in/);
});

test("importing a CSV reports bad lines and opens the new set", async ({ page }) => {
  await page.goto("/record-sets");
  await hydrated(page);
  await page.getByLabel("Name").fill("Pasted companies");
  await page.getByLabel("CSV").fill("name,city\nNorthwind,Oslo\n,Paris\nContoso,Rome\n");
  await expect(page.locator(".preview")).toContainText("3 lines after the header");
  await page.getByRole("button", { name: "Import" }).click();
  const report = page.getByRole("status");
  await expect(report).toContainText("Imported 2 records.");
  await expect(report).toContainText("line 3: the name is empty");
  await report.getByRole("link", { name: "Open the set →" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Pasted companies");
  await expect(page.locator("article.card")).toHaveCount(2);
});

test("augmenting the set runs every chip as a job to 100 %", async ({ page }) => {
  await page.goto("/record-sets");
  await hydrated(page);
  await page.getByLabel("Name").fill("Small set");
  await page.getByLabel("CSV").fill("name\nAlpha Mills\nBeta Works\n");
  await page.getByRole("button", { name: "Import" }).click();
  await page.getByRole("link", { name: "Open the set →" }).click();
  await expect(page.locator("body")).toHaveAttribute("data-live", "true");
  await page.getByRole("button", { name: "Augment this set →" }).click();
  const job = page.locator("[data-job]");
  await expect(job).toBeVisible();
  await expect(job).toHaveAttribute("data-job-status", "completed", { timeout: 20_000 });
  await expect(job).toContainText("100 % · 6 of 6 fires");
  await expect(page.locator('[data-state="idle"]')).toHaveCount(0);
});

test("a fan-out whose question cannot be fetched says so, and starts at the next try", async ({ page, pageErrors }) => {
  await page.goto("/record-sets");
  await hydrated(page);
  await page.getByLabel("Name").fill("One-record set");
  await page.getByLabel("CSV").fill("name\nGamma Yards\n");
  await page.getByRole("button", { name: "Import" }).click();
  await page.getByRole("link", { name: "Open the set →" }).click();
  await expect(page.locator("body")).toHaveAttribute("data-live", "true");
  await page.route(/\/split_confirm\.wasm$/, (route) => route.abort("internetdisconnected"));
  const augment = page.getByRole("button", { name: "Augment this set →" });
  await augment.click();
  await expect(page.locator(".fanout").getByRole("alert")).toHaveText(/could not be loaded/);
  await expect(page.locator("[data-job]")).toHaveCount(0);
  // The network is back: the same button asks again, and the job runs.
  await page.unroute(/\/split_confirm\.wasm$/);
  await augment.click();
  const job = page.locator("[data-job]");
  await expect(job).toHaveAttribute("data-job-status", "completed", { timeout: 20_000 });
  await expect(job).toContainText("100 % · 3 of 3 fires");
  const failedFetch = (e: string) => e.includes("split_confirm.wasm") || e.startsWith("TypeError: Failed to fetch");
  expect(pageErrors.filter(failedFetch).length).toBeGreaterThan(0);
  pageErrors.splice(0, pageErrors.length, ...pageErrors.filter((e) => !failedFetch(e)));
});

test("the keyboard moves between records and fires a pack by its label", async ({ page }) => {
  await openDemoSet(page);
  await page.keyboard.press("?");
  await expect(page.getByRole("dialog", { name: "Keyboard shortcuts" })).toContainText("fire LinkedIn on the focused record");
  await page.keyboard.press("Escape");
  await page.keyboard.press("j");
  await page.keyboard.press("j");
  const second = page.locator("article.card").nth(1);
  await expect(second).toBeFocused();
  await page.keyboard.press("k");
  await expect(page.locator("article.card").nth(0)).toBeFocused();
  await page.keyboard.press("j");
  await page.keyboard.type("gn");
  const news = second.locator('[data-pack="news"]');
  await expect(news).not.toHaveAttribute("data-state", "idle");
});

test("a second click on a firing chip cancels the fire, and so does the menu", async ({ page }) => {
  await openDemoSet(page);
  const chipEl = chip(page, "Juniper Schools (demo)", "facebook");
  await expect(chipEl).toHaveAttribute("data-state", "idle");
  await chipEl.click();
  await expect(chipEl).toHaveAttribute("data-state", "firing");
  await expect(chipEl).toHaveAttribute("title", /Click to cancel/);
  await chipEl.click();
  await expect(chipEl).toHaveAttribute("data-state", "idle");
  // The history says so.
  await chipEl.click({ button: "right" });
  await expect(page.locator('.connector-menu [data-connector="demo"]')).toContainText("cancelled");
  await page.keyboard.press("Escape");

  // A fire in flight can be cancelled from the menu too.
  await chipEl.click();
  await expect(chipEl).toHaveAttribute("data-state", "firing");
  await chipEl.click({ button: "right" });
  await page.getByRole("menuitem", { name: "Cancel the fire in flight" }).click();
  await expect(chipEl).toHaveAttribute("data-state", "idle");
});

test("a person's own chip labels show on their palette only", async ({ browser, baseURL }) => {
  const bob = await (await browser.newContext({ baseURL, storageState: authFile("bob") })).newPage();
  await bob.goto("/settings");
  await hydrated(bob);
  const news = bob.locator('tr[data-pack="news"]');
  // A label another pack already shows is refused, naming that pack.
  await news.getByRole("textbox").fill("in");
  await news.getByRole("button", { name: "Save" }).click();
  await expect(bob.getByRole("alert")).toContainText("linkedin");
  await news.getByRole("textbox").fill("nw");
  await news.getByRole("button", { name: "Save" }).click();
  await expect(bob.getByRole("status")).toContainText("Saved");

  await openDemoSet(bob);
  await expect(chip(bob, "Lumen Solar (demo)", "news")).toHaveText(/^nw\d*$/);
  const ada = await (await browser.newContext({ baseURL, storageState: authFile("ada") })).newPage();
  await openDemoSet(ada);
  await expect(chip(ada, "Lumen Solar (demo)", "news")).toHaveText(/^gn\d*$/);

  // Blank brings the pack's own label back.
  await bob.goto("/settings");
  await hydrated(bob);
  await bob.locator('tr[data-pack="news"]').getByRole("textbox").fill("");
  await bob.locator('tr[data-pack="news"]').getByRole("button", { name: "Save" }).click();
  await expect(bob.getByRole("status")).toContainText("Saved");
});

test("one live stream per view, through filters, searches and resyncs; the cards stay live", async ({ page }) => {
  const streams: string[] = [];
  page.on("request", (r) => {
    if (r.url().includes("/api/events")) streams.push(r.url());
  });
  await openDemoSet(page);
  await page.getByLabel("Filter").selectOption("nothing_found");
  await page.getByLabel("Filter").selectOption("all");
  const search = page.getByLabel("Search by name");
  await search.fill("Ion Battery");
  await search.press("Enter");
  await expect(page.locator("article.card")).toHaveCount(1);
  // A chip on the page now is fed by the stream opened with the first page.
  const news = chip(page, "Ion Battery Works (demo)", "news");
  await news.click();
  await expect(news).not.toHaveAttribute("data-state", "idle");
  await expect(news).not.toHaveAttribute("data-state", "firing");
  await search.fill("");
  await search.press("Enter");
  await expect(page.locator("article.card").nth(1)).toBeVisible();
  await expect(page.locator("body")).toHaveAttribute("data-live", "true");
  expect(streams).toHaveLength(1);
  expect(streams[0]).toMatch(/record_set=\d+&after=\d+$/);
});

test("a long press on a chip opens its menu on a touch screen, without firing", async ({ page }) => {
  await openDemoSet(page);
  const news = chip(page, "Harbor Light Media (demo)", "news");
  await expect(news).toHaveAttribute("data-state", "idle");
  await news.dispatchEvent("pointerdown", { pointerType: "touch", isPrimary: true });
  await expect(page.getByRole("menu", { name: "Connectors" })).toBeVisible();
  await news.dispatchEvent("pointerup", { pointerType: "touch", isPrimary: true });
  // The click that ends the press opens nothing else and fires nothing.
  await news.dispatchEvent("click");
  await page.waitForTimeout(300);
  await expect(news).toHaveAttribute("data-state", "idle");
  // A short tap still fires.
  await page.keyboard.press("Escape");
  await news.dispatchEvent("pointerdown", { pointerType: "touch", isPrimary: true });
  await news.dispatchEvent("pointerup", { pointerType: "touch", isPrimary: true });
  await news.dispatchEvent("click");
  await expect(news).not.toHaveAttribute("data-state", "idle");
});
