// Time from navigation to the first interactive chip on a 1,000-record set,
// and the size of the wasm bundle. Starts the release binary (make build) on
// a free port with a fresh database; run by `make bench`.
//
// Three profiles: loopback with an empty cache; Chromium's network
// emulation (CDP Network.emulateNetworkConditions: 1.6 Mbps down, 750 kbps
// up, 150 ms round trip) with an empty cache; and the same network with a
// warm cache (the page loaded once before in the same browser context). For
// each, the bytes that crossed the network before the chip was ready. And
// for each page, the wasm a cold load of it fetches (the admin pages are
// chunks of their own).
import { readFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { root, startServer, importSet, launchChromium } from "./server.mjs";

const served = await startServer();
const { url, cookieName, cookieValue } = served;
const id = await importSet(served, "Bench", 1000);
const browser = await launchChromium();
const SLOW = { offline: false, latency: 150, downloadThroughput: 1.6e6 / 8, uploadThroughput: 750e3 / 8 };

/** Loads the set's triage view in `page` until its first chip is clickable: ms since navigation, bytes received. */
async function load(page, cdp) {
  let bytes = 0;
  const count = (e) => (bytes += e.encodedDataLength);
  cdp.on("Network.loadingFinished", count);
  await page.goto(`${url}/record-sets/${id}`);
  await page.waitForSelector('body[data-hydrated="true"]');
  await page.waitForSelector("button.chip:not([disabled])");
  const ms = await page.evaluate(() => performance.now());
  cdp.off("Network.loadingFinished", count);
  return { ms, bytes };
}

async function profile(runs, network, warm) {
  const results = [];
  for (let run = 0; run < runs; run++) {
    const context = await browser.newContext();
    await context.addCookies([{ name: cookieName, value: cookieValue, url }]);
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    if (network) await cdp.send("Network.emulateNetworkConditions", network);
    if (warm) {
      // Loaded once before, to the end: the chunks fetched after the first
      // chip (the stream's reader) are in the cache too.
      await load(page, cdp);
      await page.waitForLoadState("networkidle");
    }
    results.push(await load(page, cdp));
    await context.close();
  }
  results.sort((a, b) => a.ms - b.ms);
  return results;
}

/** The wasm each page fetches on a cold load (compressed bytes, as sent), after it settled. */
async function routeWasm(route) {
  const context = await browser.newContext();
  await context.addCookies([{ name: cookieName, value: cookieValue, url }]);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  const wasmRequests = new Set();
  let bytes = 0;
  cdp.on("Network.responseReceived", (e) => {
    if (e.response.url.includes(".wasm")) wasmRequests.add(e.requestId);
  });
  cdp.on("Network.loadingFinished", (e) => {
    if (wasmRequests.has(e.requestId)) bytes += e.encodedDataLength;
  });
  await page.goto(`${url}${route}`);
  await page.waitForSelector('body[data-hydrated="true"]');
  await page.waitForLoadState("networkidle");
  await context.close();
  return { bytes, files: wasmRequests.size };
}

const routes = [];
for (const route of [`/record-sets/${id}`, "/record-sets", "/inventory", "/packs", "/members", "/settings"]) {
  routes.push([route.replace(String(id), "{id}"), await routeWasm(route)]);
}

const profiles = [
  ["loopback, empty cache", await profile(7, null, false)],
  ["1.6 Mbps, 150 ms RTT, empty cache", await profile(5, SLOW, false)],
  ["1.6 Mbps, 150 ms RTT, warm cache", await profile(5, SLOW, true)],
];
await browser.close();
served.stop();

const name = readFileSync(path.join(root, "target/site/pkg/name.txt"), "utf8").trim();
const wasm = readFileSync(path.join(root, `target/site/pkg/${name}/switchyard_bg.wasm`));
const kib = (n) => (n / 1024).toFixed(0);
console.log("first interactive chip, 1,000-record set (50 cards a page):");
for (const [label, r] of profiles) {
  const mid = r[Math.floor(r.length / 2)];
  console.log(
    `  ${label}: median ${mid.ms.toFixed(0)} ms (min ${r[0].ms.toFixed(0)}, max ${r[r.length - 1].ms.toFixed(0)}, ${r.length} loads), ${kib(mid.bytes)} KiB over the network`,
  );
}
console.log("wasm a cold load of each page fetches (as sent, brotli), loopback:");
for (const [route, r] of routes) console.log(`  ${route}: ${kib(r.bytes)} KiB in ${r.files} files`);
console.log(`main wasm module: ${kib(wasm.length)} KiB raw, ${kib(gzipSync(wasm, { level: 9 }).length)} KiB gzip`);
