// Triage at the speed of thought, measured on the release build (make
// build), Chromium and the demo connector without latency:
// - key to paint: from a key's keydown (a capture listener) to the first
//   frame after the focused item shows the decision (a MutationObserver,
//   then requestAnimationFrame and a task), Enter and Ctrl+Z in turn on a
//   1,000-record set whose first page has items;
// - the compact view's first render: navigation to the first line drawn,
//   on 100 and on 10,000 records after a fan-out of every pack, and the
//   scroll to the 10,000th line;
// - the compact lines' and the facets' reads through REST on both sets.
// Run by `make bench`.
import { startServer, importSet, launchChromium, percentiles } from "./server.mjs";

const served = await startServer(["--demo-latency-ms", "0"]);
const { url, session, cookieName, cookieValue } = served;
const headers = { cookie: session, origin: url, "content-type": "application/json" };
const api = async (method, path, body) => {
  const res = await fetch(`${url}${path}`, { method, headers, body: body && JSON.stringify(body) });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
};

/** Runs every pack over set `id` and waits for the fan-out's end. */
async function fanOut(id) {
  const started = await api("POST", `/api/record-sets/${id}/fanout`, {});
  for (let job = started; job.status === "pending" || job.status === "running"; ) {
    await new Promise((r) => setTimeout(r, 500));
    job = await api("GET", `/api/jobs/${started.job_id}`);
  }
}

const thousand = await importSet(served, "Thousand", 1000);
const hundred = await importSet(served, "Hundred", 100);
const tenThousand = await importSet(served, "Ten thousand", 10000);
const first = await api("GET", `/api/record-sets/${thousand}/records?limit=50`);
for (const r of first.records) await api("POST", `/api/records/${r.id}/fire`, { pack: "linkedin" });
await fanOut(hundred);
await fanOut(tenThousand);

const browser = await launchChromium();
async function newPage() {
  const context = await browser.newContext();
  await context.addCookies([{ name: cookieName, value: cookieValue, url }]);
  return [context, await context.newPage()];
}

/** Key to paint of `n` decisions on the first item of the 1,000-record set. */
async function keyToPaint(n) {
  const [context, page] = await newPage();
  await page.goto(`${url}/record-sets/${thousand}`);
  await page.waitForSelector('body[data-live="true"]');
  await page.keyboard.press("j");
  await page.keyboard.press("ArrowDown");
  await page.waitForSelector("li.item:focus");
  await page.evaluate(() => {
    window.__lat = [];
    document.addEventListener("keydown", () => {
      const item = document.activeElement;
      window.__asked = { t0: performance.now(), id: item.dataset.item, was: item.dataset.triage };
    }, true);
    new MutationObserver(() => {
      const asked = window.__asked;
      const item = asked && document.querySelector(`li.item[data-item="${asked.id}"]`);
      if (!item || item.dataset.triage === asked.was) return;
      window.__asked = undefined;
      requestAnimationFrame(() => setTimeout(() => window.__lat.push(performance.now() - asked.t0), 0));
    }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-triage"] });
  });
  for (let i = 0; i < n; i++) {
    await page.keyboard.press(i % 2 ? "Control+z" : "Enter");
    await page.waitForFunction((k) => window.__lat.length > k, i);
  }
  const figures = await page.evaluate(() => window.__lat);
  await context.close();
  return figures;
}

/** Navigation to the first line of the compact view, `runs` cold loads; and the scroll to the last line. */
async function compactFirst(id, runs, last) {
  const loads = [];
  const hydrated = [];
  const scrolls = [];
  for (let run = 0; run < runs; run++) {
    const [context, page] = await newPage();
    await page.goto(`${url}/record-sets/${id}?view=compact`);
    await page.waitForSelector('body[data-hydrated="true"]');
    hydrated.push(await page.evaluate(() => performance.now()));
    await page.waitForSelector(".compact .line[data-at='0']:not(.pending)");
    loads.push(await page.evaluate(() => performance.now()));
    scrolls.push(await page.evaluate(async (last) => {
      const list = document.querySelector(".compact");
      const t0 = performance.now();
      list.scrollTo(0, list.scrollHeight);
      while (!document.querySelector(`.compact .line[data-at='${last}']:not(.pending)`)) {
        await new Promise((r) => requestAnimationFrame(r));
      }
      return performance.now() - t0;
    }, last));
    await context.close();
  }
  return [loads, scrolls, hydrated];
}

/** Median ms of `runs` reads of a path. */
async function readTime(path, runs) {
  const figures = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await api("GET", path);
    figures.push(performance.now() - t0);
  }
  return percentiles(figures)[0];
}

await keyToPaint(20); // warm-up: the chunks, the server's caches
const keys = percentiles(await keyToPaint(200));
await compactFirst(hundred, 1, 99); // warm-up
const [small, smallScroll, smallHydrated] = await compactFirst(hundred, 5, 99);
const [big, bigScroll, bigHydrated] = await compactFirst(tenThousand, 5, 9999);
const reads = [];
for (const [label, id] of [["100", hundred], ["10,000", tenThousand]]) {
  reads.push([label, await readTime(`/api/record-sets/${id}/lines?limit=100`, 20),
    await readTime(`/api/record-sets/${id}/lines?offset=${label === "100" ? 0 : 9900}&limit=100`, 20),
    await readTime(`/api/record-sets/${id}/facets`, 10)]);
}
await browser.close();
served.stop();

const ms = (x) => `${x.toFixed(1)} ms`;
console.log(`key to paint of a decision, 1,000-record set, 200 decisions: p50 ${ms(keys[0])}, p95 ${ms(keys[1])}, max ${ms(keys[2])}`);
const [s50] = percentiles(small);
const [b50] = percentiles(big);
console.log(`compact view, navigation to the first line (median of 5 cold loads): 100 records ${ms(s50)}, 10,000 records ${ms(b50)} (${(b50 / s50).toFixed(2)}x)`);
console.log(`  of which until hydrated: 100 records ${ms(percentiles(smallHydrated)[0])}, 10,000 records ${ms(percentiles(bigHydrated)[0])}`);
console.log(`compact view, scroll to the last line (median of 5): 100 records ${ms(percentiles(smallScroll)[0])}, 10,000 records ${ms(percentiles(bigScroll)[0])}`);
for (const [label, firstLines, lastLines, facets] of reads) {
  console.log(`REST on ${label} records (median): first 100 lines ${ms(firstLines)}, last 100 lines ${ms(lastLines)}, facets ${ms(facets)}`);
}
