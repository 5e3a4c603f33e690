// Starts the real switchyard binary (built by `make site server`, never here) on
// a free port with a fresh temporary database, waits for /api/health, and hands
// its URL to the tests as SWITCHYARD_URL. Before that it adds the test users
// with the operator command, and after it signs each in and saves their
// cookies for the tests (see USERS in tests/fixtures.ts). Returns the teardown.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync, mkdirSync } from "node:fs";
import { request } from "@playwright/test";
import { USERS, PASSWORD, AUTH_DIR, authFile } from "./tests/users";
import { tmpdir } from "node:os";
import path from "node:path";

const root = path.resolve(__dirname, "..");

export default async function globalSetup(): Promise<() => Promise<void>> {
  const bin = process.env.SWITCHYARD_BIN ?? path.join(root, "target/debug/switchyard");
  if (!existsSync(bin)) {
    throw new Error(`${bin} is missing: build it first (make site server)`);
  }
  const dataDir = mkdtempSync(path.join(tmpdir(), "switchyard-e2e-"));
  const databaseUrl = `sqlite://${path.join(dataDir, "e2e.db")}`;
  for (const user of Object.values(USERS)) {
    const added = spawnSync(
      bin,
      ["user", "add", "--email", user.email, "--workspace", user.workspace, "--role", user.role],
      { cwd: root, input: `${PASSWORD}\n`, env: { ...process.env, DATABASE_URL: databaseUrl } },
    );
    if (added.status !== 0) throw new Error(`user add ${user.email} failed:\n${added.stderr}`);
  }
  const args = [
    "serve",
    "--addr",
    "127.0.0.1:0",
    "--database-url",
    databaseUrl,
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
    env: {
      ...process.env,
      RUST_LOG: process.env.RUST_LOG ?? "warn",
      // Manifest connectors added in the tests call a fake provider on this machine.
      SWITCHYARD_FETCH_ALLOW: "127.0.0.1",
      // Workspace secrets are on, sealed with a key for the tests only.
      SWITCHYARD_SECRETS_KEY: "ZTJlIHNlY3JldHMga2V5LCBub3QgZm9yIHVzZSEhISE=",
    },
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

  mkdirSync(AUTH_DIR, { recursive: true });
  for (const [name, user] of Object.entries(USERS)) {
    const context = await request.newContext({ baseURL: url });
    const res = await context.post("/auth/sign-in", {
      form: { email: user.email, password: PASSWORD, next: "/" },
      // As the site's sign-in page would send it: the CSRF check wants the origin.
      headers: { origin: url },
      maxRedirects: 0,
    });
    if (res.status() !== 303 || res.headers()["location"] !== "/") {
      throw new Error(`${user.email} could not sign in: ${res.status()} ${res.headers()["location"]}`);
    }
    await context.storageState({ path: authFile(name) });
    await context.dispose();
  }

  return async () => {
    const exited = new Promise((r) => server.once("exit", r));
    server.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    if (server.exitCode === null) server.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  };
}
