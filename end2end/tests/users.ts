// The people the browser tests act as. global-setup.ts adds them with
// `switchyard user add` and signs each in once; a test picks one by name.
import path from "node:path";

export const PASSWORD = "e2e password, long enough";

export const USERS = {
  ada: { email: "ada@demo.test", workspace: "demo", role: "admin" },
  bob: { email: "bob@demo.test", workspace: "demo", role: "member" },
  eve: { email: "eve@other.test", workspace: "other", role: "admin" },
} as const;

export type UserName = keyof typeof USERS;

export const AUTH_DIR = path.resolve(__dirname, "../.auth");

/** The saved cookies of a signed-in user. */
export function authFile(name: string): string {
  return path.join(AUTH_DIR, `${name}.json`);
}
