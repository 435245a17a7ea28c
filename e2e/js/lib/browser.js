// Browser fixtures for the console tests (test/console.test.js): Debian's
// chromium driven by playwright-core, which downloads no browser of its own.
//
//   const browser = await launchBrowser();      // once per file, closed in `after`
//   const { page, problems } = await openPage(browser);
//   await eventually("the chart to show 4", async () => assert.equal(await count(), 4));
//
// Waiting is always on a condition (locator.waitFor, eventually), never on a
// fixed sleep.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after } from "node:test";
import { chromium } from "playwright-core";

import { WAIT_MS } from "./helpers.js";

export { eventually } from "./helpers.js";

/** The browser under test: Debian's chromium package. */
export const CHROMIUM = "/usr/bin/chromium";

/** Every page's viewport (also the size of the documentation screenshot). */
export const VIEWPORT = { width: 1200, height: 800 };

/** How long a locator action or an eventually() waits before failing. */
export { WAIT_MS };

/**
 * Launches headless chromium once for the calling test file and closes it in
 * an `after` hook. A missing browser is an error that says how to install it:
 * the console tests never skip.
 */
export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the console tests drive Debian's chromium. Install it with ` +
        "`apt-get update && apt-get install -y chromium` (as root, or with sudo); scripts/test does this itself.",
    );
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"], headless: true });
  after(() => browser.close());
  return browser;
}

/**
 * Opens a page in a fresh browser context (its own sessionStorage, localStorage
 * and cookies) with the standard viewport. `problems` collects what the page
 * did wrong on its own: uncaught exceptions, Content-Security-Policy
 * violations, and every alert()/prompt() it raised (confirm() dialogs are left
 * to the test: Playwright dismisses them unless a handler is registered);
 * assertNoProblems(problems) checks them.
 *
 * @param {import("playwright-core").Browser} browser
 * @param {object} [opts]
 * @param {boolean} [opts.recordDialogs] handle every dialog here (record and
 *   dismiss it), for tests where no dialog at all may appear.
 */
export async function openPage(browser, { recordDialogs = false } = {}) {
  const context = await browser.newContext({ viewport: VIEWPORT });
  context.setDefaultTimeout(WAIT_MS);
  // Runs before the page's own scripts and outside its CSP (injected by the
  // browser, not by the page).
  await context.addInitScript(() => {
    window.__letheCspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__letheCspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} (${e.sourceFile}:${e.lineNumber})`);
    });
  });
  const page = await context.newPage();
  const problems = { pageErrors: [], dialogs: [], consoleErrors: [], page };
  page.on("pageerror", (err) => problems.pageErrors.push(String(err?.stack || err)));
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.consoleErrors.push(msg.text());
  });
  if (recordDialogs) {
    page.on("dialog", (d) => {
      problems.dialogs.push(`${d.type()}: ${d.message()}`);
      d.dismiss().catch(() => {});
    });
  }
  after(() => context.close().catch(() => {}));
  return { context, page, problems };
}

/** Fails if the page threw, violated its CSP, or (when recorded) raised a dialog. */
export async function assertNoProblems(problems) {
  let csp = [];
  try {
    csp = await problems.page.evaluate(() => window.__letheCspViolations || []);
  } catch {
    // page closed
  }
  assert.deepEqual(csp, [], "Content-Security-Policy violations");
  assert.deepEqual(problems.pageErrors, [], "uncaught exceptions in the page");
  assert.deepEqual(problems.dialogs, [], "dialogs raised by the page");
}

/**
 * The value of a textbox: an input's or textarea's value, or the text of a
 * contenteditable element with role=textbox.
 */
export async function textboxValue(locator) {
  return locator.evaluate((el) => ("value" in el ? el.value : el.innerText));
}

/**
 * Reads an ARIA table: its column headers' texts and, for every row that has
 * no column header, its cells' texts (cells, gridcells and row headers, in
 * document order).
 */
export async function readTable(table) {
  const headers = (await table.getByRole("columnheader").allInnerTexts()).map((s) => s.trim());
  const rowLocs = await bodyRows(table).all();
  const rows = [];
  for (const row of rowLocs) {
    const cells = row.getByRole("cell").or(row.getByRole("gridcell")).or(row.getByRole("rowheader"));
    rows.push((await cells.allInnerTexts()).map((s) => s.trim()));
  }
  return { headers, rows };
}

/** The rows of a table that are not header rows. */
export function bodyRows(table) {
  return table.getByRole("row").filter({ hasNot: table.page().getByRole("columnheader") });
}

/** The index of a column by its header's exact text; fails if there is none. */
export function column(headers, name) {
  const i = headers.indexOf(name);
  assert.ok(i >= 0, `no column header "${name}" among ${JSON.stringify(headers)}`);
  return i;
}
