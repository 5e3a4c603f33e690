// Every chip state a person meets, in the browser, against a scripted
// provider on this machine: the record's name says how it answers (nothing,
// 500s then a result, a 429 then a result, a slow result, one page in new
// words, one page that goes away), and a second connector needs a variable nobody set (until the
// last test sets one the provider refuses).
import { request as playwrightRequest } from "@playwright/test";
import type { APIRequestContext, Page } from "@playwright/test";
import { test, expect, authFile, chip as chipOf, hydrated, localProvider } from "./fixtures";

const RECORDS = ["Empty Co", "Broken Co", "Slow Co", "Limited Co", "Changed Co", "Gone Co"];
const SLOW_MS = 7_000;
/** The one key the scripted provider refuses. */
const REFUSED_KEY = "e2e-refused-key";

/** A search API whose answers the record's name scripts; counts calls per name. */
async function scriptedProvider() {
  const calls = new Map<string, number>();
  /** Calls per path: which connector asked (their manifests differ in it). */
  const paths = new Map<string, number>();
  const provider = await localProvider((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    paths.set(url.pathname, (paths.get(url.pathname) ?? 0) + 1);
    if (url.pathname === "/page/gone") {
      // The page a search found, now gone.
      res.writeHead(410, { "content-type": "text/html" });
      res.end("<h1>Gone</h1>");
      return;
    }
    const params = url.searchParams;
    const q = params.get("q") ?? "";
    if (params.get("key") === REFUSED_KEY) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end('{"error": "Invalid API key"}');
      return;
    }
    const n = (calls.get(q) ?? 0) + 1;
    calls.set(q, n);
    const found = () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          results: [{ url: `https://scripted.example/${encodeURIComponent(q)}/${n}`, title: `${q} page ${n}`, text: "a result" }],
        }),
      );
    };
    if (q === "Empty Co") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"results": []}');
    } else if (q === "Broken Co" && n <= 2) {
      // Twice: the chain retries a 5xx once before it says "error".
      res.writeHead(500, { "content-type": "application/json" });
      res.end('{"error": "scripted failure"}');
    } else if (q === "Limited Co" && n === 1) {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "3" });
      res.end('{"error": "slow down"}');
    } else if (q === "Changed Co") {
      // One page, described in new words from the second answer on.
      const [title, text] = n === 1 ? ["Changed Co, first words", "Before."] : ["Changed Co, new words", "After."];
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ results: [{ url: "https://scripted.example/changed", title, text }] }));
    } else if (q === "Gone Co") {
      // Found once; then the search no longer returns it.
      const results = n === 1 ? [{ url: `http://${req.headers.host}/page/gone`, title: "Gone Co, a page", text: "Soon gone." }] : [];
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ results }));
    } else if (q === "Slow Co") {
      setTimeout(found, SLOW_MS);
    } else {
      found();
    }
  });
  return { ...provider, calls, paths };
}

function manifest(id: string, name: string, capability: string, base: string, env?: string): string {
  return `id = "${id}"
display_name = "${name}"
short_label = "${id.slice(4, 7)}"
capabilities = ["${capability}"]
cost_tier = "free"
${env ? `requires_env = ["${env}"]` : ""}

[request]
url = "${base}/search"
query = { q = "{{query}}"${env ? `, key = "{{secret.${env}}}"` : ""} }

[response]
items = "$.results[*]"
url = "$.url"
title = "$.title"
snippet = "$.text"
`;
}

async function ok(res: Awaited<ReturnType<APIRequestContext["put"]>>, what: string) {
  expect(res.ok(), `${what}: ${res.status()} ${await res.text()}`).toBeTruthy();
  return res;
}

test.describe.serial("chip states", () => {
  let provider: Awaited<ReturnType<typeof scriptedProvider>>;
  let api: APIRequestContext;
  let setUrl: string;

  test.beforeAll(async ({ baseURL }) => {
    provider = await scriptedProvider();
    // Ada, an admin, as the REST door sees her signed-in browser.
    api = await playwrightRequest.newContext({
      baseURL,
      storageState: authFile("ada"),
      extraHTTPHeaders: { origin: baseURL! },
    });
    const toml = { "content-type": "application/toml" };
    await ok(await api.post("/api/manifests", { headers: toml, data: manifest("e2e-scripted", "Scripted", "search.scripted", provider.url) }), "scripted manifest");
    await ok(await api.post("/api/manifests", { headers: toml, data: manifest("e2e-keyed", "Keyed", "search.keyed", provider.url, "E2E_UNSET_KEY") }), "keyed manifest");
    const pack = (pack_id: string, short_label: string, intent: string, chain: string) => ({
      pack_id,
      display_name: pack_id === "scripted" ? "Scripted" : "Keyed",
      short_label,
      intent,
      preferred_connectors: [chain],
    });
    await ok(await api.put("/api/packs/scripted", { data: pack("scripted", "sx", "search.scripted", "e2e-scripted") }), "scripted pack");
    await ok(await api.put("/api/packs/keyed", { data: pack("keyed", "ky", "search.keyed", "e2e-keyed") }), "keyed pack");
    await ok(
      await api.put("/api/bundles/scripted", {
        data: { bundle_id: "scripted", display_name: "Scripted", members: [{ pack: "scripted" }, { pack: "keyed" }] },
      }),
      "bundle",
    );
    const imported = await ok(
      await api.post("/api/record-sets?name=Scripted%20chips&bundle=scripted", {
        headers: { "content-type": "text/csv" },
        data: `name\n${RECORDS.join("\n")}\n`,
      }),
      "import",
    );
    setUrl = `/record-sets/${((await imported.json()) as { id: number }).id}`;
  });

  test.afterAll(async () => {
    await api.delete("/api/bundles/scripted");
    await api.delete("/api/packs/scripted");
    await api.delete("/api/packs/keyed");
    await api.delete("/api/manifests/e2e-scripted");
    await api.delete("/api/manifests/e2e-keyed");
    await api.delete("/api/secrets/E2E_UNSET_KEY");
    await api.dispose();
    await provider.close();
  });

  async function open(page: Page) {
    await page.goto(setUrl);
    await expect(page.locator("body")).toHaveAttribute("data-live", "true");
  }

  const chip = (page: Page, record: string, pack = "scripted") => chipOf(page, record, pack);

  test("idle, then nothing found; a chip whose connector needs a key is disabled and names it", async ({ page }) => {
    await open(page);
    const empty = chip(page, "Empty Co");
    await expect(empty).toHaveAttribute("data-state", "idle");
    await expect(empty).toHaveAttribute("title", /Fire Scripted through Scripted/);
    await empty.click();
    await expect(empty).toHaveAttribute("data-state", "not_found");
    await expect(empty).toHaveAttribute("aria-label", "Scripted: nothing found");
    await expect(empty).not.toHaveAttribute("data-optimistic", "true");

    const keyed = chip(page, "Empty Co", "keyed");
    await expect(keyed).toHaveAttribute("data-state", "needs_env");
    await expect(keyed).toBeDisabled();
    await expect(keyed).toHaveAttribute("title", /Needs E2E_UNSET_KEY to activate/);
    expect(provider.calls.get("Empty Co")).toBe(1);
  });

  test("an error shows its reason, and a click on it fires again", async ({ page }) => {
    await open(page);
    const broken = chip(page, "Broken Co");
    await broken.click();
    await expect(broken).toHaveAttribute("data-state", "error");
    await expect(broken).toHaveAttribute("aria-label", /Scripted: error: .*500/);
    await broken.click();
    await expect(broken).toHaveAttribute("data-state", "found");
    await expect(broken).toHaveAttribute("data-count", "1");
    expect(provider.calls.get("Broken Co")).toBe(3);
  });

  test("after 5 s without an answer the chip looks not-found, and a second click still cancels the fire", async ({ page }) => {
    test.setTimeout(30_000);
    await open(page);
    const slow = chip(page, "Slow Co");
    await slow.click();
    await expect(slow).toHaveAttribute("data-state", "firing");
    await expect(slow.locator(".spinner")).toBeVisible();
    await expect(slow).toHaveAttribute("data-optimistic", "true", { timeout: 6_000 });
    await expect(slow).toHaveAttribute("data-state", "not_found");
    await expect(slow).toHaveAttribute("aria-label", "Scripted: nothing found yet, still looking");
    await expect(slow).toHaveAttribute("title", /still looking \(click to cancel\)/);
    await slow.click();
    await expect(slow).toHaveAttribute("data-state", "idle");
    await expect(slow).not.toHaveAttribute("data-optimistic", "true");
    // The history says so, and the provider was asked once.
    await slow.click({ button: "right" });
    await expect(page.locator('.connector-menu [data-connector="e2e-scripted"]')).toContainText("cancelled");
    await page.keyboard.press("Escape");
    expect(provider.calls.get("Slow Co")).toBe(1);
  });

  test("a rate-limited chip shows the time left and comes back by itself when the wait ends", async ({ page }) => {
    await open(page);
    const limited = chip(page, "Limited Co");
    await limited.click();
    await expect(limited).toHaveAttribute("data-state", "rate_limited");
    await expect(limited).toBeDisabled();
    await expect(limited.locator(".wait")).toHaveText(/^[1-3] s$/);
    await expect(limited).toHaveAttribute("title", /can fire again in [1-3] s/);
    // No reload: the chip counts down to clickable again.
    await expect(limited).toHaveAttribute("data-state", "idle", { timeout: 6_000 });
    await expect(limited).toBeEnabled();
    await limited.click();
    await expect(limited).toHaveAttribute("data-state", "found");
    expect(provider.calls.get("Limited Co")).toBe(2);
  });

  test("a page found again in new words keeps its triage and says it changed since it was accepted; the menu holds the fire's receipt", async ({ page }) => {
    await open(page);
    const changed = chip(page, "Changed Co");
    await changed.click();
    await expect(changed).toHaveAttribute("data-state", "found");
    const card = page.locator('article.card:has(h2:text-is("Changed Co"))');
    const item = card.locator("li.item");
    await expect(item.getByRole("link")).toHaveText("Changed Co, first words");
    await item.getByRole("button", { name: "Accept" }).click();
    await expect(item).toHaveAttribute("data-triage", "accepted-canonical");
    await expect(item.locator(".badge.changed")).toHaveCount(0);

    await changed.click({ button: "right" });
    const menu = page.getByRole("menu", { name: "Connectors" });
    await menu.locator('[data-connector="e2e-scripted"]').getByRole("menuitem", { name: "Fire through Scripted" }).click();
    await expect(item.getByRole("link")).toHaveText("Changed Co, new words");
    await expect(item).toHaveAttribute("data-triage", "accepted-canonical");
    await expect(item.locator(".badge.changed")).toHaveText("changed since you accepted it");
    await expect(item.locator(".revision")).toContainText("title and snippet changed");
    await expect(item.locator(".revision .before")).toHaveText("«Changed Co, first words» — Before.");
    await expect(item.locator(".snippet")).toHaveText("After.");
    expect(provider.calls.get("Changed Co")).toBe(2);

    // The menu's last fire carries its receipt on hover: the manifest's
    // version and the request it sent, parameter names only.
    await changed.click({ button: "right" });
    const last = menu.locator('[data-connector="e2e-scripted"] .menu-last');
    await expect(last).toHaveText(/^fired .* — found 1$/);
    await expect(last).toHaveAttribute("title", /^manifest [0-9a-f]{12}\nGET 127\.0\.0\.1:\d+\/search\?q → 200, \d+ B, \d+ ms$/);
    await expect(last).not.toHaveAttribute("title", /Changed Co/);
  });

  test("a page the search stops returning that answers 410 is marked gone, live, and keeps its triage", async ({ page }) => {
    await open(page);
    const chipGone = chip(page, "Gone Co");
    await chipGone.click();
    await expect(chipGone).toHaveAttribute("data-state", "found");
    const item = page.locator('article.card:has(h2:text-is("Gone Co")) li.item');
    await item.getByRole("button", { name: "Accept" }).click();
    await expect(item).toHaveAttribute("data-triage", "accepted-canonical");
    await expect(item).not.toHaveAttribute("data-gone", "true");

    await chipGone.click({ button: "right" });
    const menu = page.getByRole("menu", { name: "Connectors" });
    await menu.locator('[data-connector="e2e-scripted"]').getByRole("menuitem", { name: "Fire through Scripted" }).click();
    // No reload: the re-check's answer arrives on the stream (the chip
    // still counts the item: it is kept).
    await expect(item).toHaveAttribute("data-gone", "true");
    await expect(item.locator(".badge.gone")).toHaveText("gone");
    await expect(item.locator(".gone-note")).toHaveText(/^Gone just now: Scripted stopped returning it, and it answered HTTP 410 when re-checked\.$/);
    await expect(item).toHaveAttribute("data-triage", "accepted-canonical");
    await expect(chipGone).toHaveAttribute("data-state", "found");
    expect(provider.calls.get("Gone Co")).toBe(2);
  });

  test("a refused key tells the admins where they are and the inventory says what to do, until a new key is set", async ({ page, signedIn }) => {
    await ok(await api.put("/api/secrets/E2E_UNSET_KEY", { data: { value: REFUSED_KEY } }), "the refused key");
    const bob = await signedIn("bob");
    for (const p of [page, bob]) await open(p);
    const keyed = chip(page, "Empty Co", "keyed");
    await expect(keyed).toBeEnabled();
    await keyed.click();
    await expect(keyed).toHaveAttribute("data-state", "error");

    // Ada, an admin, is told on the page she is on; Bob, a member, is not.
    const told = page.locator('.together .attention li[data-connector="e2e-keyed"]');
    await expect(told).toContainText("Keyed's key was refused");
    await expect(told.getByRole("link", { name: "what to do" })).toHaveAttribute("href", "/inventory");
    await expect(bob.locator(".together .attention")).toHaveCount(0);

    // The inventory says what to do; a new key ends it, live.
    await told.getByRole("link", { name: "what to do" }).click();
    await expect(page.locator("body")).toHaveAttribute("data-live", "true");
    const item = page.locator('section.attention li[data-connector="e2e-keyed"]');
    await expect(item).toHaveAttribute("data-kind", "key-refused");
    await expect(item).toContainText("HTTP 401");
    await expect(item).toContainText("Set this workspace's E2E_UNSET_KEY again under Secrets; the next fire tries the new key.");
    await expect(page.locator("body")).not.toContainText(REFUSED_KEY);
    await ok(await api.put("/api/secrets/E2E_UNSET_KEY", { data: { value: "e2e-good-key" } }), "a new key");
    await expect(page.locator("section.attention")).toHaveCount(0);
    await expect(page.locator('tr[data-connector="e2e-keyed"]')).toHaveAttribute("data-status", "available");
  });

  test("a person orders a pack's connectors in Settings: their click fires the new first, a colleague's the old one, and the menu marks their order", async ({ page, signedIn }) => {
    const toml = { "content-type": "application/toml" };
    await ok(await api.post("/api/manifests", { headers: toml, data: manifest("e2e-second", "Second", "search.scripted", `${provider.url}/second`) }), "second manifest");
    const bob = await signedIn("bob");
    const mine = bob.locator('.my-chain[data-pack="scripted"]');
    try {
      await bob.goto("/settings");
      await hydrated(bob);
      await expect(mine).toHaveAttribute("data-yours", "false");
      await expect(mine).toContainText("the workspace's: Scripted");
      await mine.getByRole("button", { name: "Set your own order for Scripted (sx)" }).click();
      await mine.getByRole("combobox", { name: "Add to the order of Scripted (sx)" }).selectOption("e2e-second");
      await mine.getByRole("button", { name: "Move Second up" }).click();
      await mine.getByRole("button", { name: "Save your order for Scripted (sx)" }).click();
      await expect(mine.getByRole("status")).toHaveText("Saved: your clicks try this order.");
      await expect(mine).toHaveAttribute("data-yours", "true");

      for (const p of [page, bob]) await open(p);
      const adas = chip(page, "Empty Co");
      const bobs = chip(bob, "Empty Co");
      await expect(bobs).toHaveAttribute("title", /through Second \(your order\)/);
      await expect(adas).toHaveAttribute("title", /through Scripted \(the pack's order\)/);
      const asked = (path: string) => () => provider.paths.get(path) ?? 0;
      const [second, scripted] = [asked("/second/search"), asked("/search")];
      const before = { second: second(), scripted: scripted() };
      await adas.click();
      await expect.poll(scripted).toBe(before.scripted + 1);
      await expect(adas).not.toHaveAttribute("data-state", "firing");
      expect(second()).toBe(before.second);
      await bobs.click();
      await expect.poll(second).toBe(before.second + 1);

      await bobs.click({ button: "right" });
      const menu = bob.getByRole("menu", { name: "Connectors" });
      await expect(menu.locator('[data-connector="e2e-second"] .badge.yours')).toHaveText("your #1");
      await expect(menu.locator('[data-connector="e2e-scripted"] .badge.yours')).toHaveText("your #2");
      await bob.keyboard.press("Escape");
      // Ada's menu has no order of hers to mark.
      await adas.click({ button: "right" });
      await expect(page.locator('.connector-menu [data-connector="e2e-second"]')).toBeVisible();
      await expect(page.locator(".connector-menu .badge.yours")).toHaveCount(0);
      await page.keyboard.press("Escape");
    } finally {
      await bob.goto("/settings");
      await hydrated(bob);
      await mine.getByRole("button", { name: "Use the workspace's order for Scripted (sx)" }).click();
      await expect(mine.getByRole("status")).toHaveText("Back to the workspace's order.");
      await api.delete("/api/manifests/e2e-second");
    }
  });

  test("the menu shows each connector's short label; a record that starts with a connector switched off says so beside its chip, and the chain fires", async ({ page }) => {
    const toml = { "content-type": "application/toml" };
    await ok(await api.post("/api/manifests", { headers: toml, data: manifest("e2e-second", "Second", "search.scripted", provider.url) }), "second manifest");
    try {
      await open(page);
      const empty = chip(page, "Empty Co");
      const before = provider.calls.get("Empty Co") ?? 0;
      await empty.click({ button: "right" });
      const menu = page.getByRole("menu", { name: "Connectors" });
      await expect(menu.locator('[data-connector="e2e-scripted"] .menu-short')).toHaveText("scr");
      const second = menu.locator('[data-connector="e2e-second"]');
      await expect(second.locator(".menu-short")).toHaveText("sec");
      await second.getByRole("menuitemcheckbox", { name: "Always start with Second for this record" }).click();
      await ok(await api.post("/api/connectors/e2e-second/disable", { data: {} }), "switching Second off");

      await empty.click();
      await expect(empty).toHaveAttribute("data-state", "not_found");
      const note = page.locator('article.card:has(h2:text-is("Empty Co")) .chip-note');
      await expect(note).toContainText("this record starts with e2e-second, which cannot fire");
      await expect(note).toContainText("using the chain");
      expect(provider.calls.get("Empty Co")).toBe(before + 1);
      // The next fire says nothing it did not meet.
      await empty.click({ button: "right" });
      await menu.locator('[data-connector="e2e-scripted"]').getByRole("menuitem", { name: "Fire through Scripted" }).click();
      await expect(note).toHaveCount(0);
    } finally {
      await api.delete("/api/manifests/e2e-second");
    }
  });
});
