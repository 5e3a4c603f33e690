import { readFileSync } from "node:fs";
import http from "node:http";
import { request as playwrightRequest } from "@playwright/test";
import { test, expect, authFile, chip as chipOf, hydrated } from "./fixtures";
import type { UserName } from "./users";

/** Opens event streams as `name` until the server refuses one; the open ones. */
async function holdStreams(baseURL: string, name: UserName): Promise<http.ClientRequest[]> {
  const state = JSON.parse(readFileSync(authFile(name), "utf8")) as { cookies: { name: string; value: string }[] };
  const cookie = state.cookies.map((c) => `${c.name}=${c.value}`).join("; ");
  const open: http.ClientRequest[] = [];
  for (let i = 0; i < 30; i++) {
    const req = http.get(`${baseURL}/api/events`, { headers: { cookie }, agent: false });
    const status = await new Promise<number>((resolve, reject) => {
      req.on("response", (res) => resolve(res.statusCode ?? 0));
      req.on("error", reject);
    });
    if (status !== 200) {
      req.destroy();
      break;
    }
    open.push(req);
  }
  return open;
}

// A live stream the server refused when the page opened it (here: the
// person already holds as many streams as one may; a busy database's 503
// or a proxy's 502 during a restart do the same) is opened again by the
// page once it can be, and brings what happened meanwhile. On a set of its
// own, so other tests' demo records stay as they are.
test("a stream refused at first is opened again and brings what happened meanwhile", async ({ baseURL, signedIn, pageErrors }) => {
  const api = await playwrightRequest.newContext({ baseURL, storageState: authFile("ada"), extraHTTPHeaders: { origin: baseURL! } });
  const imported = await api.post("/api/record-sets?name=Refused%20stream&bundle=social-profiles", {
    headers: { "content-type": "text/csv" },
    data: "name,website\nLater Co,https://later.example\n",
  });
  expect(imported.ok(), await imported.text()).toBeTruthy();
  const setId = ((await imported.json()) as { id: number }).id;

  // A script of Ada's holds every stream she may open. Not a browser tab:
  // a browser opens at most six connections to one host over HTTP/1.1.
  const held = await holdStreams(baseURL!, "ada");
  expect(held.length, "the cap on streams refuses one before 30").toBeLessThan(30);
  expect(held.length, "some streams were open").toBeGreaterThan(0);

  const page = await signedIn("ada");
  await page.goto(`/record-sets/${setId}`);
  await hydrated(page);
  await expect(page.locator("body")).toHaveAttribute("data-live", "false");
  const chip = chipOf(page, "Later Co", "linkedin");
  await expect(chip).toHaveAttribute("data-state", "idle");

  // Meanwhile the record is fired elsewhere; then the script stops.
  const records = (await (await api.get(`/api/record-sets/${setId}/records`)).json()) as { records: { id: number }[] };
  const fired = await api.post(`/api/records/${records.records[0].id}/fire`, { data: { pack: "linkedin" } });
  expect(fired.ok(), await fired.text()).toBeTruthy();
  held.forEach((r) => r.destroy());

  await expect(page.locator("body")).toHaveAttribute("data-live", "true", { timeout: 20_000 });
  await expect(chip).not.toHaveAttribute("data-state", "idle");
  await api.dispose();
  // The browser logs each refused stream; those refusals were the point.
  const refused = (e: string) => e.includes("/api/events") && e.includes("429");
  pageErrors.splice(0, pageErrors.length, ...pageErrors.filter((e) => !refused(e)));
});
