// What the page benchmarks share: the release binary (make build) started
// on a free port with a fresh database and the browser tests' demo packs,
// signed in as its first admin, and Debian's Chromium.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

export const root = path.resolve(import.meta.dirname, "../..");

/** Starts switchyard with `extra` arguments; answers its URL, the admin's session cookie and `stop()`. */
export async function startServer(extra = []) {
  const bin = process.env.SWITCHYARD_BIN ?? path.join(root, "target/release/switchyard");
  const dir = mkdtempSync(path.join(tmpdir(), "switchyard-bench-"));
  const server = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--database-url", `sqlite://${dir}/bench.db`,
    "--demo", "--packs", path.join(root, "end2end/fixtures/packs.toml"), ...extra], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  // A fresh database: the first run prints its admin's password once.
  const [url, password] = await new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (c) => {
      out += c;
      const m = out.match(/serving on (http:\/\/[^\s/]+)\//);
      const p = out.match(/keep it safe\):\n(\S+)\n/);
      if (m && p) resolve([m[1], p[1]]);
    });
    server.on("exit", (code) => reject(new Error(`switchyard exited with ${code}`)));
  });
  const signIn = await fetch(`${url}/auth/sign-in`, {
    method: "POST",
    redirect: "manual",
    // As the site's own sign-in page would: the CSRF check wants the origin.
    headers: { origin: url },
    body: new URLSearchParams({ email: "admin@switchyard.local", password, next: "/" }),
  });
  const session = signIn.headers.getSetCookie().find((c) => c.startsWith("switchyard.sid=")).split(";")[0];
  const [cookieName, cookieValue] = session.split("=");
  const stop = () => {
    server.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  };
  return { url, session, cookieName, cookieValue, stop };
}

/** Imports a set of `n` made-up companies; answers its id. */
export async function importSet({ url, session }, name, n) {
  let csv = "name,city\n";
  for (let i = 0; i < n; i++) csv += `Company ${i},City ${i}\n`;
  const res = await fetch(`${url}/api/record-sets?name=${encodeURIComponent(name)}&bundle=social-profiles`, {
    method: "POST", body: csv, headers: { cookie: session, origin: url },
  });
  if (!res.ok) throw new Error(`import of ${name} failed: ${await res.text()}`);
  return (await res.json()).id;
}

export function launchChromium() {
  return chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--headless",
    "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
}

/** `[p50, p95, max]` of some figures. */
export function percentiles(figures) {
  const sorted = [...figures].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return [at(0.5), at(0.95), sorted[sorted.length - 1]];
}
