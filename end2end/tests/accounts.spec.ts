import { test, expect, hydrated, authFile } from "./fixtures";

test("an admin adds a member in the browser, who signs in with the password shown once", async ({ browser, baseURL }) => {
  const ada = await (await browser.newContext({ baseURL, storageState: authFile("ada") })).newPage();
  await ada.goto("/members");
  await hydrated(ada);
  await expect(ada.locator('tr[data-member="bob@demo.test"] .role')).toHaveText("member");
  await ada.getByLabel("Email").fill("carol@demo.test");
  await ada.getByRole("button", { name: "Add member" }).click();
  const notice = ada.getByRole("status");
  await expect(notice).toContainText("Their password, shown once, is:");
  const password = (await notice.textContent())!.split("is: ")[1].trim();
  await expect(ada.locator('tr[data-member="carol@demo.test"] .role')).toHaveText("member");

  const carol = await (await browser.newContext({ baseURL, storageState: undefined })).newPage();
  await carol.goto("/members");
  await hydrated(carol);
  await carol.getByLabel("Email").fill("carol@demo.test");
  await carol.getByLabel("Password").fill(password);
  await carol.getByRole("button", { name: "Sign in" }).click();
  await expect(carol).toHaveURL(/\/members$/);
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
