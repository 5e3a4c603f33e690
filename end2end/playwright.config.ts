// Browser tests: Debian's Chromium (never a downloaded browser) against the real
// switchyard binary, which global-setup.ts starts on a free port.
import { defineConfig } from "@playwright/test";
import { authFile } from "./tests/users";

export default defineConfig({
  testDir: "./tests",
  globalSetup: "./global-setup.ts",
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 10_000 },
  forbidOnly: !!process.env.CI,
  reporter: process.env.CI ? [["list"]] : [["list"], ["html", { open: "never" }]],
  use: {
    // Signed in as Ada (admin of the demo workspace) unless a test says otherwise.
    storageState: authFile("ada"),
    headless: true,
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--headless",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
});
