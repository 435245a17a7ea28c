// The web console (GET /_explorer/) end to end in a real browser: Debian's
// chromium through playwright-core (lib/browser.js), against the real binary.
// Everything on the page is found by its accessible name (getByRole,
// getByLabel, getByText): those names are the console's interface. Setup and
// verification go through the official SDK; the manual clock through the admin
// API (/_lethe/clock), as in clock.test.js.
//
// Servers: one with the wall clock (most tests), one with --clock=manual
// --disable-purger (the expiry chart and backlog), and, in the key test, one
// with a random --key.
//
// LETHE_CONSOLE_SCREENSHOT=/path/file.png makes the expiry-chart test of the
// settings page save a 1200x800 screenshot of it (docs/console-settings.png).

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, test } from "node:test";
import { fileFixture } from "../lib/helpers.js";
import { assertNoProblems, bodyRows, column, eventually, launchBrowser, openPage, readTable, textboxValue } from "../lib/browser.js";
import { EMULATOR_KEY, client, startServer, uid } from "../lib/server.js";

const browser = await launchBrowser();
const { srv, cosmos, newDatabase } = await fileFixture();
const manual = await startServer({ args: ["--clock=manual", "--disable-purger"] });
after(() => manual.stop());
const manualCosmos = client(manual.endpoint);
after(() => manualCosmos.dispose());

const PAGE_SIZE = 50;
const XSS = "<img src=x onerror=alert(1)>";
const TTL_MESSAGE = (v) =>
  `The input defaultTtl '${v}' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.`;
const WRONG_KEY_MESSAGE =
  "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol.";

// ---------------------------------------------------------------- routes

const enc = encodeURIComponent;
const routes = {
  db: (db) => `/dbs/${enc(db)}`,
  settings: (db, coll) => `/dbs/${enc(db)}/colls/${enc(coll)}/settings`,
  items: (db, coll) => `/dbs/${enc(db)}/colls/${enc(coll)}/items`,
  query: (db, coll) => `/dbs/${enc(db)}/colls/${enc(coll)}/query`,
};

/** The console's URL on a server, with a hash route. */
function consoleUrl(endpoint, route = "") {
  return new URL("_explorer/", endpoint).href + (route ? `#${route}` : "");
}

/** Opens the console at a route and waits until it is connected (the tree shows). */
async function openAt(page, endpoint, route = "") {
  await page.goto(consoleUrl(endpoint, route));
  await nav(page).waitFor();
}

/** Moves the page to a route, as the user would by following a link. */
async function go(page, endpoint, route) {
  await page.goto(consoleUrl(endpoint, route));
}

/** The hash route the page is on, decoded for comparison. */
const hashOf = (page) => decodeURIComponent(new URL(page.url()).hash);

/** The items table: the table with an "Expires" column (not the chart's). */
const itemsTable = (page) => page.getByRole("table").filter({ has: page.getByRole("columnheader", { name: "Expires", exact: true }) });
const nav = (page) => page.getByRole("navigation", { name: "Databases" });
const button = (scope, name) => scope.getByRole("button", { name, exact: true });
const link = (scope, name) => scope.getByRole("link", { name, exact: true });

// ---------------------------------------------------------------- SDK side

/** Whether a read resolves (true) or answers 404 (false). */
async function exists(read) {
  try {
    await read();
    return true;
  } catch (err) {
    if (err.code === 404) return false;
    throw err;
  }
}

/** A container on `cosmos` with a /pk partition key and the given defaultTtl (undefined: TTL off). */
async function newContainer(db, defaultTtl, id = uid("c")) {
  const def = { id, partitionKey: { paths: ["/pk"] } };
  if (defaultTtl !== undefined) def.defaultTtl = defaultTtl;
  const { container } = await db.containers.create(def);
  return container;
}

/** Creates documents, ten at a time; returns what the server stored (with _ts). */
async function createAll(container, docs) {
  const out = [];
  for (let i = 0; i < docs.length; i += 10) {
    const rs = await Promise.all(docs.slice(i, i + 10).map((d) => container.items.create(d)));
    out.push(...rs.map((r) => r.resource));
  }
  return out;
}

/** The effective ttl of a document in a container (null: never expires). */
function effectiveTtl(doc, defaultTtl) {
  if (defaultTtl === undefined) return null;
  if (doc.ttl !== undefined) return doc.ttl === -1 ? null : doc.ttl;
  return defaultTtl === -1 ? null : defaultTtl;
}

/** The expiry instant of a document in Unix seconds (null: never). */
function expiryOf(doc, defaultTtl) {
  const ttl = effectiveTtl(doc, defaultTtl);
  return ttl === null ? null : doc._ts + ttl;
}

/** The contract's 60 one-minute buckets: bucket i holds expiries in (now+60i, now+60(i+1)]. */
function expectedBuckets(docs, defaultTtl, now) {
  const counts = new Array(60).fill(0);
  for (const d of docs) {
    const exp = expiryOf(d, defaultTtl);
    if (exp === null || exp <= now) continue;
    const i = Math.ceil((exp - now) / 60) - 1;
    if (i < 60) counts[i]++;
  }
  return counts;
}

/** The admin API of the manual-clock server. */
async function admin(method, path, body) {
  const res = await fetch(new URL(path, manual.endpoint), {
    method,
    headers: { "content-type": "application/json", "x-lethe-master-key": EMULATOR_KEY },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json;
}

/** The server time (Unix seconds) as ISO 8601, with and without milliseconds. */
const isoForms = (s) => {
  const iso = new Date(s * 1000).toISOString();
  return [iso.replace(".000Z", "Z"), iso];
};

// ---------------------------------------------------------------- page side

/** Clicks "Load more" until it is gone, waiting for each page to arrive. */
async function loadAll(page, table, maxClicks = 100) {
  for (let i = 0; ; i++) {
    assert.ok(i < maxClicks, "Load more does not end");
    // Let the page settle: the last load finished, then Load more either shows or not.
    await page.waitForLoadState();
    const more = button(page, "Load more");
    if (!(await more.isVisible())) return;
    const before = await bodyRows(table).count();
    await more.click();
    await eventually("Load more to add rows or disappear", async () => {
      const now = await bodyRows(table).count();
      assert.ok(now > before || !(await more.isVisible()), `still ${now} rows after Load more`);
    });
  }
}

/** The items table's rows as {id, pk, expires} by column header. */
async function itemRows(table) {
  const { headers, rows } = await readTable(table);
  const [ci, cp, ce] = [column(headers, "id"), column(headers, "Partition key"), column(headers, "Expires")];
  return rows.map((r) => ({ id: r[ci], pk: r[cp], expires: r[ce] }));
}

/** A document's JSON as shown in the editor. */
async function editorJson(page) {
  const box = page.getByLabel("Document", { exact: true });
  await box.waitFor();
  const text = await textboxValue(box);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`the Document textbox does not hold JSON (${err.message}): ${text}`);
  }
}

/**
 * The document editor: the innermost element holding the "Document" textbox
 * and a "Delete" button (the container page may have a Delete of its own).
 */
function editorScope(page) {
  return page
    .locator("*")
    .filter({ has: page.getByLabel("Document", { exact: true }) })
    .filter({ has: page.getByRole("button", { name: "Delete", exact: true }) })
    .last();
}

/** The Count column of the "Upcoming expirations" figure's table. */
async function chartCounts(page) {
  const figure = page.getByRole("figure", { name: "Upcoming expirations", exact: true });
  const table = figure.getByRole("table");
  // The console may keep the table in a collapsed disclosure (<details>) under the bars: open it.
  if (!(await table.isVisible())) {
    const summary = figure.locator("summary");
    if ((await summary.count()) === 1) await summary.click();
  }
  const { headers, rows } = await readTable(table);
  const c = column(headers, "Count");
  return rows.map((r) => {
    assert.match(r[c], /^\d+$/, `a Count cell: ${JSON.stringify(r)}`);
    return Number(r[c]);
  });
}

/** N of "Expired, awaiting purge: N" in the TTL backlog region. */
async function backlogCount(page) {
  const text = await page.getByRole("region", { name: "TTL backlog" }).innerText();
  const m = /Expired, awaiting purge:\s*(\d+)/.exec(text);
  assert.ok(m, `the TTL backlog region says: ${JSON.stringify(text)}`);
  return Number(m[1]);
}

/** Waits for an alert containing `message` (whitespace-normalized). */
async function expectAlert(page, message) {
  const alert = page.getByRole("alert").filter({ hasText: message });
  try {
    await alert.first().waitFor();
  } catch (err) {
    const shown = await page.getByRole("alert").allInnerTexts().catch(() => []);
    throw new Error(`no alert with ${JSON.stringify(message)}; alerts on the page: ${JSON.stringify(shown)}`, { cause: err });
  }
}

/** Registers a one-shot handler for the next confirm() and returns a promise of its message. */
function answerConfirm(page, accept) {
  return new Promise((resolve) => {
    page.once("dialog", async (d) => {
      const msg = `${d.type()}: ${d.message()}`;
      if (accept) await d.accept();
      else await d.dismiss();
      resolve(msg);
    });
  });
}

/** Parses the JSON array shown in the Results region. */
async function resultsJson(page) {
  const text = (await page.getByRole("region", { name: "Results" }).innerText()).trim();
  const attempts = [text, text.slice(text.indexOf("["), text.lastIndexOf("]") + 1)];
  for (const t of attempts) {
    try {
      const v = JSON.parse(t);
      if (Array.isArray(v)) return v;
    } catch {
      // try the next form
    }
  }
  throw new Error(`the Results region does not show a JSON array: ${text.slice(0, 500)}`);
}

/** N of "Request charge: N RUs". */
async function requestCharge(page) {
  const el = page.getByText(/Request charge: \d+(\.\d+)? RUs/);
  const text = await el.first().innerText();
  return Number(/Request charge: (\d+(?:\.\d+)?) RUs/.exec(text)[1]);
}

// ---------------------------------------------------------------- tests

test("static console: / for text/html redirects to /_explorer/, CSP without inline scripts, assets need no key", async () => {
  // A browser asking for HTML is sent to the console; the SDK's account read is not.
  const root = await fetch(srv.endpoint, { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" }, redirect: "manual" });
  assert.ok([301, 302, 303, 307, 308].includes(root.status), `GET / for text/html: status ${root.status}`);
  assert.equal(new URL(root.headers.get("location"), srv.endpoint).href, consoleUrl(srv.endpoint));
  const api = await fetch(srv.endpoint, { headers: { accept: "application/json" }, redirect: "manual" });
  assert.equal(api.status, 401, "GET / for JSON without a key stays the API (401)");

  const res = await fetch(consoleUrl(srv.endpoint));
  assert.equal(res.status, 200, "GET /_explorer/ without a key");
  assert.match(res.headers.get("content-type") ?? "", /^text\/html/);
  const csp = res.headers.get("content-security-policy");
  assert.ok(csp, "the console is served with a Content-Security-Policy header");
  const directives = Object.fromEntries(
    csp.split(";").map((d) => d.trim().split(/\s+/)).filter((d) => d[0]).map(([name, ...values]) => [name.toLowerCase(), values]),
  );
  const scriptSrc = directives["script-src"] ?? directives["default-src"];
  assert.ok(scriptSrc, `the CSP restricts scripts (script-src or default-src): ${csp}`);
  assert.ok(!scriptSrc.includes("'unsafe-inline'"), `the CSP allows inline scripts: ${csp}`);
  const html = await res.text();
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    assert.match(m[1], /\bsrc\s*=/i, `an inline script in the HTML: ${m[0].slice(0, 200)}`);
    assert.equal(m[2].trim(), "", `a script with a src and a body: ${m[0].slice(0, 200)}`);
  }
  assert.doesNotMatch(html, /<[^>]+\son[a-z]+\s*=/i, "inline event handler attributes in the HTML");

  // Every asset the HTML names, fetched without a key.
  const assets = [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi)]
    .map((m) => new URL(m[1], consoleUrl(srv.endpoint)))
    .filter((u) => u.origin === new URL(srv.endpoint).origin);
  assert.ok(assets.length > 0, "the HTML loads at least one script or stylesheet of its own");
  for (const u of assets) {
    const a = await fetch(u);
    assert.equal(a.status, 200, `${u.pathname} without a key`);
  }

  // In the browser: following / lands on the console; every console asset
  // loads without an Authorization header; API calls are signed.
  const { page, problems } = await openPage(browser);
  const seen = [];
  page.on("response", (r) => seen.push({ url: r.url(), status: r.status(), headers: r.request().headers() }));
  await page.goto(srv.endpoint);
  assert.equal(new URL(page.url()).pathname, "/_explorer/");
  await nav(page).waitFor();
  const consoleFiles = seen.filter((r) => new URL(r.url).pathname.startsWith("/_explorer/"));
  assert.ok(consoleFiles.length >= 2, `the page and its assets: ${JSON.stringify(consoleFiles.map((r) => r.url))}`);
  for (const r of consoleFiles) {
    assert.ok([200, 304].includes(r.status), `${r.url}: ${r.status}`);
    assert.equal(r.headers.authorization, undefined, `${r.url} was sent with a key`);
  }
  const signed = seen.filter((r) => r.headers.authorization);
  assert.ok(signed.length > 0, `the console made signed API calls: ${JSON.stringify(seen.map((r) => r.url))}`);
  for (const r of signed) {
    assert.match(decodeURIComponent(r.headers.authorization), /^type=master&ver=1\.0&sig=/, r.url);
    assert.ok(r.headers["x-ms-date"], `${r.url} has x-ms-date`);
  }
  await assertNoProblems(problems);
});

test("key: the emulator key connects at once; another key needs the key field, a wrong key shows the 401", async (t) => {
  await t.test("emulator key: connected without any input", async () => {
    const db = await newDatabase("auto");
    const { page, problems } = await openPage(browser);
    await page.goto(consoleUrl(srv.endpoint));
    await link(nav(page), db.id).waitFor();
    await assertNoProblems(problems);
  });

  await t.test("a non-default key: the field, a wrong key, the right key", async () => {
    const key = randomBytes(64).toString("base64");
    const keyed = await startServer({ args: ["--key", key] });
    after(() => keyed.stop());
    const kc = client(keyed.endpoint, { key });
    after(() => kc.dispose());
    const { database } = await kc.databases.create({ id: uid("keyed") });

    const { page, problems } = await openPage(browser);
    await page.goto(consoleUrl(keyed.endpoint));
    const field = page.getByLabel("Account key", { exact: true });
    await field.waitFor();

    const wrong = randomBytes(64).toString("base64");
    await field.fill(wrong);
    await button(page, "Connect").click();
    await expectAlert(page, WRONG_KEY_MESSAGE);
    assert.equal(await link(page, database.id).count(), 0, "a wrong key shows no databases");

    await field.fill(key);
    await button(page, "Connect").click();
    await link(nav(page), database.id).waitFor();

    const storage = await page.evaluate(() => ({
      session: Object.keys(sessionStorage).map((k) => [k, sessionStorage.getItem(k)]),
      local: Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)]),
    }));
    const holds = (entries) => entries.some(([k, v]) => k.includes(key) || (v ?? "").includes(key));
    assert.ok(holds(storage.session), `the key is kept in sessionStorage: ${JSON.stringify(storage.session.map(([k]) => k))}`);
    assert.ok(!holds(storage.local), "the key is not in localStorage");
    for (const form of [key, enc(key)]) assert.ok(!page.url().includes(form), `the key is in the URL: ${page.url()}`);
    assert.ok(!(await page.context().cookies()).some((c) => c.value.includes(key) || c.value.includes(enc(key))), "the key is in a cookie");

    // sessionStorage survives a reload of the tab: still connected.
    await page.reload();
    await link(nav(page), database.id).waitFor();
    // A new session (a new context) has to give the key again.
    const fresh = await openPage(browser);
    await fresh.page.goto(consoleUrl(keyed.endpoint));
    await fresh.page.getByLabel("Account key", { exact: true }).waitFor();
    assert.equal(await link(fresh.page, database.id).count(), 0);
    await assertNoProblems(problems);
    await assertNoProblems(fresh.problems);
  });
});

test("create a database and a container through the dialogs; delete both after confirm()", async () => {
  const { page, problems } = await openPage(browser);
  const requests = [];
  page.on("request", (r) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`));
  await openAt(page, srv.endpoint);
  const dbId = uid("ui-db");
  const collId = uid("ui-coll");

  await button(page, "New database").click();
  let dialog = page.getByRole("dialog");
  await dialog.waitFor();
  await dialog.getByLabel("Database id", { exact: true }).fill(dbId);
  await button(dialog, "Create").click();
  await eventually("the new database through the SDK", async () => assert.ok(await exists(() => cosmos.database(dbId).read()), dbId));
  await link(nav(page), dbId).waitFor();

  await button(page, "New container").click();
  dialog = page.getByRole("dialog");
  await dialog.waitFor();
  const dbField = dialog.getByLabel("Database id", { exact: true });
  if ((await dbField.evaluate((el) => el.tagName)) === "SELECT") await dbField.selectOption(dbId);
  else await dbField.fill(dbId);
  await dialog.getByLabel("Container id", { exact: true }).fill(collId);
  await dialog.getByLabel("Partition key path", { exact: true }).fill("/pk");
  const ttlGroup = dialog.getByRole("radiogroup", { name: "Time to Live", exact: true });
  await ttlGroup.getByRole("radio", { name: "On", exact: true }).check();
  await dialog.getByLabel("Time to live (seconds)", { exact: true }).fill("60");
  await button(dialog, "Create").click();
  const coll = cosmos.database(dbId).container(collId);
  await eventually("the new container through the SDK", async () => assert.ok(await exists(() => coll.read()), collId));
  const { resource } = await coll.read();
  assert.deepEqual(resource.partitionKey.paths, ["/pk"]);
  assert.equal(resource.defaultTtl, 60);
  await dialog.waitFor({ state: "hidden" });
  // The tree lists the container (under its database, which may need opening).
  if (!(await link(nav(page), collId).isVisible())) await link(nav(page), dbId).click();
  await link(nav(page), collId).waitFor();

  // Delete the container: dismissing the confirm deletes nothing.
  await go(page, srv.endpoint, routes.settings(dbId, collId));
  await page.getByRole("radiogroup", { name: "Time to Live", exact: true }).waitFor();
  const deletes = () => requests.filter((r) => r.startsWith("DELETE "));
  let asked = answerConfirm(page, false);
  await button(page, "Delete").click();
  assert.match(await asked, /^confirm: /, "Delete asks with confirm()");
  await page.evaluate(() => new Promise((r) => setTimeout(r, 0))); // the click handler has returned
  assert.deepEqual(deletes(), [], "no DELETE after the confirm was dismissed");
  assert.ok(await exists(() => coll.read()), "the container is still there");

  asked = answerConfirm(page, true);
  await button(page, "Delete").click();
  await asked;
  await eventually("the container to be deleted", async () => assert.ok(!(await exists(() => coll.read()))));
  await link(nav(page), collId).waitFor({ state: "detached" });
  assert.ok(await exists(() => cosmos.database(dbId).read()), "deleting the container leaves its database");

  // Delete the database the same way.
  await go(page, srv.endpoint, routes.db(dbId));
  await button(page, "Delete").waitFor();
  asked = answerConfirm(page, false);
  await button(page, "Delete").click();
  await asked;
  await page.evaluate(() => new Promise((r) => setTimeout(r, 0)));
  assert.equal(deletes().length, 1, `one DELETE so far (the container's): ${JSON.stringify(deletes())}`);
  assert.ok(await exists(() => cosmos.database(dbId).read()), "the database is still there");

  asked = answerConfirm(page, true);
  await button(page, "Delete").click();
  await asked;
  await eventually("the database to be deleted", async () => assert.ok(!(await exists(() => cosmos.database(dbId).read()))));
  await link(nav(page), dbId).waitFor({ state: "detached" });
  await assertNoProblems(problems);
});

test("settings: each Time to Live choice saved and shown again; refused values show the server's message and change nothing", async (t) => {
  const db = await newDatabase("settings");
  const container = await newContainer(db, undefined);
  const { page, problems } = await openPage(browser);
  const group = page.getByRole("radiogroup", { name: "Time to Live", exact: true });
  const radio = (name) => group.getByRole("radio", { name, exact: true });
  const seconds = page.getByLabel("Time to live (seconds)", { exact: true });
  const defaultTtl = async () => (await container.read()).resource.defaultTtl;

  /** Opens the settings page afresh and waits until it shows `choice` (and `value`). */
  const reopen = async (choice, value) => {
    await page.goto("about:blank");
    await openAt(page, srv.endpoint, routes.settings(db.id, container.id));
    await eventually(`the settings page to show "${choice}"`, async () => {
      assert.ok(await radio(choice).isChecked(), `"${choice}" is not checked`);
      for (const other of ["Off", "On (no default)", "On"].filter((c) => c !== choice)) {
        assert.ok(!(await radio(other).isChecked()), `"${other}" is checked too`);
      }
      if (value !== undefined) assert.equal(await textboxValue(seconds), String(value));
    });
  };
  const save = async () => {
    await button(page, "Save").click();
    await page.getByRole("status").filter({ hasText: "Saved" }).first().waitFor();
  };

  await t.test("Off → On (no default) → On 120 → Off, each checked through the SDK and on reopening", async () => {
    await reopen("Off");
    await radio("On (no default)").check();
    await save();
    assert.equal(await defaultTtl(), -1);
    await reopen("On (no default)");

    await radio("On").check();
    await seconds.fill("120");
    await save();
    assert.equal(await defaultTtl(), 120);
    await reopen("On", 120);

    await radio("Off").check();
    await save();
    assert.equal(await defaultTtl(), undefined, "Off removes defaultTtl");
    const { resource } = await container.read();
    assert.ok(!("defaultTtl" in resource), `defaultTtl absent: ${JSON.stringify(resource)}`);
    await reopen("Off");
  });

  await t.test("0, -5, 1.5 and 2147483648 are refused with the server's message", async () => {
    const { resource } = await container.read();
    await container.replace({ ...resource, defaultTtl: 60 });
    for (const bad of ["0", "-5", "1.5", "2147483648"]) {
      await reopen("On", 60);
      await seconds.fill(bad);
      await button(page, "Save").click();
      await expectAlert(page, TTL_MESSAGE(bad));
      assert.equal(await defaultTtl(), 60, `after trying ${bad}`);
      assert.equal(await page.getByRole("status").filter({ hasText: "Saved" }).count(), 0, `"Saved" after ${bad} was refused`);
    }
    await reopen("On", 60);
  });

  await t.test("the TTL backlog region (wall clock, purger on: nothing waits); no Advance clock", async () => {
    await reopen("On", 60);
    await eventually("the TTL backlog", async () => assert.equal(await backlogCount(page), 0));
    // Without --clock=manual there is no clock to advance.
    await page.getByRole("figure", { name: "Upcoming expirations", exact: true }).waitFor();
    assert.equal(await button(page, "Advance clock").count(), 0, "no Advance clock without --clock=manual");
  });
  await assertNoProblems(problems);
});

test("items: 120 documents paged by Load more, Expires from _ts and ttl; create, edit and delete in the editor", async () => {
  const db = await newDatabase("items");
  const container = await newContainer(db, 3600);
  const ttlOf = [undefined, -1, 7200, 100000];
  const docs = await createAll(
    container,
    Array.from({ length: 120 }, (_, i) => {
      const d = { id: `item-${String(i).padStart(3, "0")}`, pk: `p${i % 3}`, n: i };
      if (ttlOf[i % 4] !== undefined) d.ttl = ttlOf[i % 4];
      return d;
    }),
  );
  const byId = new Map(docs.map((d) => [d.id, d]));

  const { page, problems } = await openPage(browser);
  await openAt(page, srv.endpoint, routes.items(db.id, container.id));
  const table = itemsTable(page);
  const rows = bodyRows(table);
  const more = button(page, "Load more");

  // One server page (50) per click.
  for (const n of [50, 100, 120]) {
    await eventually(`${n} rows`, async () => assert.equal(await rows.count(), n));
    if (n < 120) await more.click();
  }
  await more.waitFor({ state: "hidden" });
  assert.equal(await rows.count(), 120, "no more rows after the last page");

  const shown = await itemRows(table);
  const ids = shown.map((r) => r.id);
  assert.equal(new Set(ids).size, ids.length, "every id once");
  assert.deepEqual([...ids].sort(), [...byId.keys()].sort());
  for (const r of shown) {
    const d = byId.get(r.id);
    assert.ok([d.pk, JSON.stringify(d.pk)].includes(r.pk), `${r.id}: Partition key cell ${JSON.stringify(r.pk)}, document pk ${d.pk}`);
    const exp = expiryOf(d, 3600);
    if (exp === null) {
      assert.equal(r.expires, "never", `${r.id} (ttl ${d.ttl})`);
    } else {
      assert.match(r.expires, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/, `${r.id}: Expires is ISO 8601`);
      assert.equal(Date.parse(r.expires), exp * 1000, `${r.id}: Expires ${r.expires}, _ts ${d._ts} + ttl ${effectiveTtl(d, 3600)}`);
    }
    // The id cell is a button named by the id.
    assert.equal(await button(table, r.id).count(), 1, `a button named ${r.id}`);
  }

  // New item: the editor opens with a template; Save creates it.
  await button(page, "New item").click();
  const editor = page.getByLabel("Document", { exact: true });
  await editor.waitFor();
  assert.ok((await textboxValue(editor)).trim().length > 0, "the New item editor holds a template");
  await editor.fill(JSON.stringify({ id: "made-in-console", pk: "p9", note: "new" }, null, 2));
  await button(page.locator("*").filter({ has: editor }).filter({ has: button(page, "Save") }).last(), "Save").click();
  await eventually("the new document through the SDK", async () => {
    const r = await container.item("made-in-console", "p9").read();
    assert.equal(r.statusCode, 200);
    assert.equal(r.resource.note, "new");
  });

  // Edit: the editor shows the stored document; Save replaces it.
  await button(page, "Refresh").click();
  await eventually("Refresh to restart at the first page", async () => assert.equal(await rows.count(), PAGE_SIZE));
  await loadAll(page, table);
  assert.equal(await rows.count(), 121);
  await button(table, "made-in-console").waitFor();
  await button(table, "item-005").click();
  const shownDoc = await eventually("the editor to show item-005", async () => {
    const j = await editorJson(page);
    assert.equal(j.id, "item-005");
    return j;
  });
  const stored = byId.get("item-005");
  for (const k of ["id", "pk", "n", "ttl"]) assert.deepEqual(shownDoc[k], stored[k], `the editor's ${k}`);
  await editor.fill(JSON.stringify({ ...shownDoc, n: 5005, edited: true }, null, 2));
  await button(editorScope(page), "Save").click();
  await eventually("the edit through the SDK", async () => {
    const { resource } = await container.item("item-005", stored.pk).read();
    assert.equal(resource.n, 5005);
    assert.equal(resource.edited, true);
  });

  // Delete from the editor (a confirm(), if the console asks one, is accepted).
  await button(table, "item-006").click();
  await eventually("the editor to show item-006", async () => assert.equal((await editorJson(page)).id, "item-006"));
  const confirms = [];
  const onDialog = (d) => {
    confirms.push(d.message());
    d.accept().catch(() => {});
  };
  page.once("dialog", onDialog);
  await button(editorScope(page), "Delete").click();
  await eventually("the delete through the SDK", async () => {
    const r = await container.item("item-006", byId.get("item-006").pk).read();
    assert.equal(r.statusCode, 404);
  });
  page.off("dialog", onDialog);
  assert.ok(await exists(() => container.read()), `the container is still there (confirm said: ${confirms})`);
  await button(page, "Refresh").click();
  await eventually("Refresh", async () => assert.equal(await rows.count(), PAGE_SIZE));
  await loadAll(page, table);
  const listed = (await itemRows(table)).map((r) => r.id);
  assert.equal(listed.length, 120);
  assert.ok(!listed.includes("item-006"), "the deleted document is not listed");
  assert.ok(listed.includes("made-in-console"));
  await assertNoProblems(problems);
});

test("items: Expires is never for every document of a container with TTL off", async () => {
  const db = await newDatabase("items-off");
  const container = await newContainer(db, undefined);
  await createAll(container, [
    { id: "a", pk: "p", ttl: 100 },
    { id: "b", pk: "p", ttl: -1 },
    { id: "c", pk: "p" },
  ]);
  const { page, problems } = await openPage(browser);
  await openAt(page, srv.endpoint, routes.items(db.id, container.id));
  const table = itemsTable(page);
  await eventually("3 rows", async () => assert.equal(await bodyRows(table).count(), 3));
  assert.deepEqual((await itemRows(table)).map((r) => [r.id, r.expires]).sort(), [["a", "never"], ["b", "never"], ["c", "never"]]);
  assert.equal(await button(page, "Load more").count(), 0, "no Load more for one page");
  await assertNoProblems(problems);
});

test("settings under the manual clock: the expiry chart and the TTL backlog follow Advance clock (--clock=manual --disable-purger)", async () => {
  // The only test on this server: plain ids, as they show in the documentation's screenshot.
  const { database: db } = await manualCosmos.databases.create({ id: "shop" });
  const defaultTtl = 7200;
  const container = await newContainer(db, defaultTtl, "sessions");
  const t0 = (await admin("GET", "_lethe/clock")).now;
  const spec = [
    ...[1, 2, 3].map((i) => ({ id: `ttl30-${i}`, ttl: 30 })),
    { id: "ttl60", ttl: 60 }, // the last instant of minute 0
    { id: "ttl61", ttl: 61 }, // the first of minute 1
    ...[1, 2].map((i) => ({ id: `ttl90-${i}`, ttl: 90 })),
    { id: "ttl3600", ttl: 3600 }, // minute 59
    { id: "ttl3601", ttl: 3601 }, // beyond the hour
    { id: "never", ttl: -1 },
    { id: "default" }, // the container's 7200
  ];
  // More documents spread over the hour (minutes 3 to 57), for a chart worth a look.
  for (let k = 3; k <= 57; k++) for (let j = 0; j < [1, 2, 3, 1, 0, 2][k % 6]; j++) spec.push({ id: `spread-${k}-${j}`, ttl: 60 * k + 20 });
  const docs = await createAll(container, spec.map((d, i) => ({ ...d, pk: `p${i % 4}` })));
  for (const d of docs) assert.equal(d._ts, t0, "the manual clock stamps every document alike");

  const { page, problems } = await openPage(browser);
  await openAt(page, manual.endpoint, routes.settings(db.id, container.id));
  const clockRegion = page.getByRole("region", { name: "Server clock" });
  await eventually("the Server clock region to show the server time", async () => {
    const text = await clockRegion.innerText();
    assert.ok(isoForms(t0).some((f) => text.includes(f)), `${JSON.stringify(text)} should show ${isoForms(t0)[0]}`);
  });
  await eventually("the settings page to show On 7200", async () => {
    assert.ok(await page.getByRole("radio", { name: "On", exact: true }).isChecked());
    assert.equal(await textboxValue(page.getByLabel("Time to live (seconds)", { exact: true })), String(defaultTtl));
  });

  const before = expectedBuckets(docs, defaultTtl, t0);
  assert.deepEqual(before.slice(0, 2), [4, 3], "the test's own arithmetic: ttl 30 x3 and 60 in minute 0; 61 and 90 x2 in minute 1");
  assert.equal(before[59], 1);
  await eventually("the chart's 60 rows to match _ts + ttl", async () => {
    const counts = await chartCounts(page);
    assert.equal(counts.length, 60, "one row per minute");
    assert.deepEqual(counts, before);
  });
  assert.equal(await backlogCount(page), 0);

  // Advance 61 s: minute 0's documents (and ttl61, expiring at exactly now) expire.
  await page.getByLabel("Seconds", { exact: true }).fill("61");
  await button(page, "Advance clock").click();
  await eventually("the server clock to move", async () => assert.equal((await admin("GET", "_lethe/clock")).now, t0 + 61));
  await eventually("the Server clock region to show the new time", async () => {
    const text = await clockRegion.innerText();
    assert.ok(isoForms(t0 + 61).some((f) => text.includes(f)), `${JSON.stringify(text)} should show ${isoForms(t0 + 61)[0]}`);
  });
  const afterAdvance = expectedBuckets(docs, defaultTtl, t0 + 61);
  assert.equal(afterAdvance[0], 2, "the test's own arithmetic: ttl 90 x2 in minute 0");
  await eventually("the chart to drop the expired documents", async () => assert.deepEqual(await chartCounts(page), afterAdvance));
  const expired = docs.filter((d) => expiryOf(d, defaultTtl) !== null && expiryOf(d, defaultTtl) <= t0 + 61);
  assert.deepEqual(expired.map((d) => d.id).sort(), ["ttl30-1", "ttl30-2", "ttl30-3", "ttl60", "ttl61"]);
  await eventually("the backlog to count them", async () => assert.equal(await backlogCount(page), expired.length));
  // The oldest expired at t0 + 30: 31 seconds ago.
  const backlogText = await page.getByRole("region", { name: "TTL backlog" }).innerText();
  assert.match(backlogText, /\b31\b/, `the oldest expired document's age (31 s) in ${JSON.stringify(backlogText)}`);

  if (process.env.LETHE_CONSOLE_SCREENSHOT) {
    // The page as it opens: at the top, nothing focused, the tables folded away.
    await page.evaluate(() => {
      for (const d of document.querySelectorAll("details[open]")) d.open = false;
      document.activeElement?.blur();
      window.scrollTo(0, 0);
    });
    await page.mouse.move(0, 0);
    await page.screenshot({ path: process.env.LETHE_CONSOLE_SCREENSHOT });
  }

  // The items table no longer lists the expired documents; Expires for the rest.
  await page.getByRole("link", { name: "Items", exact: true }).click();
  await eventually("the items route", async () => assert.equal(hashOf(page), `#${decodeURIComponent(routes.items(db.id, container.id))}`));
  const table = itemsTable(page);
  await eventually("the first page of items", async () => assert.equal(await bodyRows(table).count(), PAGE_SIZE));
  await loadAll(page, table);
  const live = docs.filter((d) => !expired.includes(d));
  const shown = await itemRows(table);
  const shownIds = shown.map((r) => r.id);
  const missing = live.map((d) => d.id).filter((id) => !shownIds.includes(id));
  const twice = shownIds.filter((id, i) => shownIds.indexOf(id) !== i);
  const extra = shownIds.filter((id) => !live.some((d) => d.id === id));
  assert.deepEqual({ missing, twice, extra }, { missing: [], twice: [], extra: [] }, `${shownIds.length} rows for ${live.length} live documents`);
  for (const r of shown) {
    const exp = expiryOf(docs.find((d) => d.id === r.id), defaultTtl);
    if (exp === null) assert.equal(r.expires, "never", r.id);
    else assert.equal(Date.parse(r.expires), exp * 1000, `${r.id}: ${r.expires}`);
  }
  await assertNoProblems(problems);
});

test("query: Run, Request charge summed over pages, Load more one page at a time, errors in an alert", async () => {
  const db = await newDatabase("query");
  const container = await newContainer(db, undefined);
  await createAll(container, Array.from({ length: 120 }, (_, i) => ({ id: `q-${String(i).padStart(3, "0")}`, pk: `p${i % 5}`, n: i })));

  const { page, problems } = await openPage(browser);
  const charges = [];
  page.on("response", (r) => {
    const req = r.request();
    const h = req.headers();
    const isQuery = String(h["x-ms-documentdb-isquery"]).toLowerCase() === "true" || /query\+json/.test(h["content-type"] ?? "");
    const isPlan = String(h["x-ms-cosmos-is-query-plan-request"]).toLowerCase() === "true";
    if (req.method() === "POST" && /\/docs$/.test(new URL(r.url()).pathname) && isQuery && !isPlan && r.status() === 200) {
      const c = r.headers()["x-ms-request-charge"];
      if (c) charges.push(Number(c));
    }
  });
  await openAt(page, srv.endpoint, routes.query(db.id, container.id));
  await page.getByLabel("Query", { exact: true }).fill("SELECT * FROM c");
  await button(page, "Run").click();

  const more = button(page, "Load more");
  let lastCharge = 0;
  for (const n of [50, 100, 120]) {
    const results = await eventually(`${n} results`, async () => {
      const r = await resultsJson(page);
      assert.equal(r.length, n);
      return r;
    });
    const charge = await eventually("the request charge to cover every page", async () => {
      const c = await requestCharge(page);
      const sum = charges.reduce((a, b) => a + b, 0);
      assert.ok(c > lastCharge, `Request charge ${c} after ${n} results, was ${lastCharge}`);
      assert.ok(Math.abs(c - sum) < 0.01, `Request charge ${c}, the pages' x-ms-request-charge sum ${sum} (${charges})`);
      return c;
    });
    lastCharge = charge;
    if (n < 120) {
      await more.click();
    } else {
      const ids = results.map((d) => d.id);
      assert.equal(new Set(ids).size, 120, "every document once");
    }
  }
  await more.waitFor({ state: "hidden" });

  // An error: the server's message in an alert.
  let message;
  try {
    await container.items.query("SELECT * FROM c WHERE").fetchAll();
    assert.fail("the SDK ran a broken query");
  } catch (err) {
    message = err.body?.message ?? err.message;
  }
  assert.match(message, /1:22/);
  await page.getByLabel("Query", { exact: true }).fill("SELECT * FROM c WHERE");
  await button(page, "Run").click();
  await expectAlert(page, message);
  await assertNoProblems(problems);
});

test("deep links: a route opened directly lands on its page; the back button returns to the previous route", async () => {
  const db = await newDatabase("deep ü");
  const container = await newContainer(db, undefined, `deep coll ${uid("ü")}`);
  await createAll(container, [{ id: "one", pk: "p" }, { id: "two", pk: "p" }]);

  const { page, problems } = await openPage(browser);
  await page.goto(consoleUrl(srv.endpoint, routes.items(db.id, container.id)));
  const table = itemsTable(page);
  await button(table, "one").waitFor();
  await button(table, "two").waitFor();

  const itemsHash = `#${decodeURIComponent(routes.items(db.id, container.id))}`;
  const queryHash = `#${decodeURIComponent(routes.query(db.id, container.id))}`;
  const settingsHash = `#${decodeURIComponent(routes.settings(db.id, container.id))}`;
  assert.equal(hashOf(page), itemsHash);
  // The route's ids are URI-encoded.
  assert.ok(new URL(page.url()).hash.includes(enc(container.id)), page.url());

  await link(page, "Query").click();
  await page.getByLabel("Query", { exact: true }).waitFor();
  await eventually("the query route", async () => assert.equal(hashOf(page), queryHash));
  await page.goBack();
  await eventually("back on the items route", async () => assert.equal(hashOf(page), itemsHash));
  await button(itemsTable(page), "one").waitFor();

  await link(page, "Settings").click();
  await page.getByRole("radiogroup", { name: "Time to Live", exact: true }).waitFor();
  await eventually("the settings route", async () => assert.equal(hashOf(page), settingsHash));
  await page.goBack();
  await eventually("back on the items route", async () => assert.equal(hashOf(page), itemsHash));
  await button(itemsTable(page), "two").waitFor();

  // The database page, directly.
  const other = await openPage(browser);
  await other.page.goto(consoleUrl(srv.endpoint, routes.db(db.id)));
  await button(other.page, "Delete").waitFor();
  await link(nav(other.page), db.id).waitFor();
  assert.equal(hashOf(other.page), `#${decodeURIComponent(routes.db(db.id))}`);
  await assertNoProblems(problems);
  await assertNoProblems(other.problems);
});

test(`ids and content are text, never HTML: ${XSS}`, async () => {
  const { database: db } = await cosmos.databases.create({ id: XSS });
  after(() => db.delete().catch(() => {}));
  const container = await newContainer(db, 3600, XSS);
  await container.items.create({ id: XSS, pk: XSS, html: "<script>alert(2)</script><b id=bold>bold</b>", img: '<img src=y onerror="alert(3)">' });

  const { page, problems } = await openPage(browser, { recordDialogs: true });
  await openAt(page, srv.endpoint);
  const noMarkup = async (where) => {
    const injected = await page.evaluate(() => document.querySelectorAll("img[src=x], img[src=y], #bold").length);
    assert.equal(injected, 0, `${where}: an id or a document's content was parsed as HTML`);
  };

  await link(nav(page), XSS).first().click();
  await eventually("the database route", async () => assert.equal(hashOf(page), `#/dbs/${XSS}`));
  if (!(await link(nav(page), XSS).nth(1).isVisible())) await link(nav(page), XSS).first().click();
  await eventually("the container in the tree", async () => assert.equal(await link(nav(page), XSS).count(), 2));
  await noMarkup("the tree");

  await go(page, srv.endpoint, routes.items(db.id, container.id));
  const table = itemsTable(page);
  await button(table, XSS).waitFor();
  const row = (await itemRows(table))[0];
  assert.equal(row.id, XSS);
  assert.ok([XSS, JSON.stringify(XSS)].includes(row.pk), row.pk);
  await button(table, XSS).click();
  const doc = await eventually("the editor", async () => {
    const j = await editorJson(page);
    assert.equal(j.id, XSS);
    return j;
  });
  assert.equal(doc.html, "<script>alert(2)</script><b id=bold>bold</b>");
  await noMarkup("the items page and editor");

  await go(page, srv.endpoint, routes.settings(db.id, container.id));
  await page.getByRole("radiogroup", { name: "Time to Live", exact: true }).waitFor();
  await page.getByRole("region", { name: "TTL backlog" }).waitFor();
  await noMarkup("the settings page");

  await go(page, srv.endpoint, routes.query(db.id, container.id));
  await page.getByLabel("Query", { exact: true }).fill("SELECT * FROM c");
  await button(page, "Run").click();
  const results = await eventually("the query results", async () => {
    const r = await resultsJson(page);
    assert.equal(r.length, 1);
    return r;
  });
  assert.equal(results[0].id, XSS);
  assert.ok((await page.getByRole("region", { name: "Results" }).innerText()).includes("<script>alert(2)</script>"), "the content shows literally");
  await noMarkup("the query results");

  // The text shows literally wherever the id appears.
  assert.ok((await page.getByText(XSS, { exact: true }).count()) >= 1, "the id shows as text");
  await page.evaluate(() => new Promise((r) => setTimeout(r, 0)));
  await assertNoProblems(problems);
});
