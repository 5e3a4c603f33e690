// Starts the real switchyard binary (built by `make site server`, never here) on
// a free port with a fresh temporary database, waits for /api/health, and hands
// its URL to the tests as SWITCHYARD_URL. Returns the teardown.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const root = path.resolve(__dirname, "..");

export default async function globalSetup(): Promise<() => Promise<void>> {
  const bin = process.env.SWITCHYARD_BIN ?? path.join(root, "target/debug/switchyard");
  if (!existsSync(bin)) {
    throw new Error(`${bin} is missing: build it first (make site server)`);
  }
  const dataDir = mkdtempSync(path.join(tmpdir(), "switchyard-e2e-"));
  const args = [
    "serve",
    "--addr",
    "127.0.0.1:0",
    "--database-url",
    `sqlite://${path.join(dataDir, "e2e.db")}`,
    // Hermetic: the demo record set and connector, and packs whose chains are
    // only the demo connector, so no test reaches a real provider.
    "--demo",
    // Slow enough for a person (and a test) to cancel a fire in flight.
    "--demo-latency-ms",
    "2000",
    "--packs",
    path.join(root, "end2end/fixtures/packs.toml"),
  ];
  const server = spawn(bin, args, {
    cwd: root,
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn" },
    stdio: ["ignore", "pipe", "inherit"],
  });

  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`switchyard did not start:\n${out}`)), 30_000);
    server.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const found = out.match(/serving on (http:\/\/[^\s/]+)\//);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    server.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`switchyard exited with ${code}:\n${out}`));
    });
  });

  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) break;
    } catch {
      // not answering yet
    }
    if (i > 100) throw new Error(`${url}/api/health never answered`);
    await new Promise((r) => setTimeout(r, 100));
  }
  process.env.SWITCHYARD_URL = url;

  return async () => {
    const exited = new Promise((r) => server.once("exit", r));
    server.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    if (server.exitCode === null) server.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  };
}
