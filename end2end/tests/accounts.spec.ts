import { test, expect, hydrated, authFile } from "./fixtures";

test("an admin adds a member in the browser, who chooses a password through the link shown once", async ({ browser, baseURL }) => {
  const ada = await (await browser.newContext({ baseURL, storageState: authFile("ada") })).newPage();
  await ada.goto("/members");
  await hydrated(ada);
  await expect(ada.locator('tr[data-member="bob@demo.test"] .role')).toHaveText("member");
  await ada.getByLabel("Email").fill("carol@demo.test");
  await ada.getByRole("button", { name: "Add member" }).click();
  const notice = ada.getByRole("status");
  await expect(notice).toContainText("send it to them:");
  const link = (await notice.textContent())!.split("send it to them: ")[1].trim();
  expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/set-password#.{40,}$/);
  await expect(ada.locator('tr[data-member="carol@demo.test"] .role')).toHaveText("member");

  // Carol opens the link, chooses her password and is signed in.
  const carol = await (await browser.newContext({ baseURL, storageState: undefined })).newPage();
  await carol.goto(link);
  await hydrated(carol);
  await carol.getByLabel("Password", { exact: true }).fill("carol's own long password");
  await carol.getByLabel("Password again").fill("carol's own long password");
  await carol.getByRole("button", { name: "Set password and sign in" }).click();
  await expect(carol).toHaveURL(/\/$|\/record-sets$/);
  await carol.goto("/members");
  await hydrated(carol);
  // A member sees who is here but cannot change it.
  await expect(carol.locator('tr[data-member="ada@demo.test"] .role')).toHaveText("admin");
  await expect(carol.getByRole("button", { name: "Add member" })).toHaveCount(0);
  await expect(carol.getByRole("button", { name: "Remove" })).toHaveCount(0);

  // Ada takes Carol out; Carol's next page load goes to sign-in.
  await ada.locator('tr[data-member="carol@demo.test"]').getByRole("button", { name: "Remove" }).click();
  await expect(ada.getByRole("status")).toContainText("no longer a member");
  await carol.goto("/record-sets");
  await expect(carol).toHaveURL(/\/sign-in/);
});
