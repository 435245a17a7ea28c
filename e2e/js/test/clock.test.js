// `lethe serve --clock=manual`: testing a 30-minute session without sleeping.
// The server clock moves only through the admin API, reached here with plain
// fetch() and the x-lethe-master-key header, while the data goes through the
// official SDK. The background purger is off (--disable-purger), so that
// POST /_lethe/purge is the only thing that deletes and its count is exact.

import assert from "node:assert/strict";
import { after, test } from "node:test";
import { assertGone, assertLive, fileFixture, readFeedAll } from "../lib/helpers.js";
import { EMULATOR_KEY, startServer, uid } from "../lib/server.js";

const started = Math.floor(Date.now() / 1000);
const { srv, newDatabase } = await fileFixture({ args: ["--clock=manual", "--disable-purger"] });

/** Calls the admin API and resolves with {status, body}; key null sends no key. */
async function admin(endpoint, method, path, body, key = EMULATOR_KEY) {
  const headers = { "content-type": "application/json" };
  if (key !== null) headers["x-lethe-master-key"] = key;
  const res = await fetch(new URL(path, endpoint), {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** The server clock in Unix seconds, checking both forms of the answer. */
async function clockNow(endpoint = srv.endpoint) {
  const { status, body } = await admin(endpoint, "GET", "_lethe/clock");
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.nowRfc3339, new Date(body.now * 1000).toISOString().replace(".000Z", "Z"));
  return body.now;
}

async function advance(seconds) {
  const { status, body } = await admin(srv.endpoint, "POST", "_lethe/clock", { advanceSeconds: seconds });
  assert.equal(status, 200, JSON.stringify(body));
  return body.now;
}

/** Asserts a Cosmos-shaped error answer. */
function assertError(r, status, what) {
  assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(typeof r.body.code, "string", what);
  assert.ok(r.body.message, what);
}

test("a 30-minute session expires when the clock is advanced 30 minutes", async () => {
  const db = await newDatabase("app");
  const { container } = await db.containers.create({ id: uid("sessions"), partitionKey: { paths: ["/user"] }, defaultTtl: 1800 });
  const t0 = await clockNow();
  // The file's first test: the clock has not been moved yet.
  assert.ok(t0 >= started && t0 <= Date.now() / 1000, `a manual clock starts at the wall-clock time: ${t0}, server started at ${started}`);

  const { resource: session } = await container.items.create({ id: "s1", user: "u1" });
  await container.items.create({ id: "pinned", user: "u1", ttl: -1 });
  assert.equal(session._ts, t0, "documents are stamped with the manual clock");
  await assertLive(container, "s1", "u1");

  assert.equal(await advance(1799), t0 + 1799);
  await assertLive(container, "s1", "u1", "one second before the session expires");

  assert.equal(await advance(1), t0 + 1800);
  await assertGone(container, "s1", "u1", "the session after 30 minutes");
  const { resources } = await container.items.query("SELECT VALUE c.id FROM c").fetchAll();
  assert.deepEqual(resources, ["pinned"]);
  assert.deepEqual((await readFeedAll(container)).map((d) => d.id), ["pinned"]);

  const purged = await admin(srv.endpoint, "POST", "_lethe/purge");
  assert.equal(purged.status, 200);
  assert.deepEqual(purged.body, { purged: 1 });
  assert.deepEqual((await admin(srv.endpoint, "POST", "_lethe/purge")).body, { purged: 0 });
  await assertLive(container, "pinned", "u1");
});

test("set moves the clock to a given time, never back", async () => {
  const now = await clockNow();
  const r = await admin(srv.endpoint, "POST", "_lethe/clock", { set: now + 3600 });
  assert.equal(r.status, 200);
  assert.equal(r.body.now, now + 3600);
  assertError(await admin(srv.endpoint, "POST", "_lethe/clock", { set: now }), 400, "set backwards");
  assert.equal(await clockNow(), now + 3600);
});

test("bad requests change nothing", async () => {
  const now = await clockNow();
  for (const body of ['{"advanceSeconds":-1}', '{"advanceSeconds":0}', '{"advanceSeconds":2.5}', '{"advanceSeconds":"60"}', "{}", "nonsense"]) {
    assertError(await admin(srv.endpoint, "POST", "_lethe/clock", body), 400, body);
  }
  const wrong = "AAAA" + EMULATOR_KEY.slice(4);
  assertError(await admin(srv.endpoint, "POST", "_lethe/clock", { advanceSeconds: 60 }, wrong), 401, "wrong key");
  assertError(await admin(srv.endpoint, "POST", "_lethe/clock", { advanceSeconds: 60 }, null), 401, "no key");
  assertError(await admin(srv.endpoint, "POST", "_lethe/purge", undefined, wrong), 401, "purge with a wrong key");
  assertError(await admin(srv.endpoint, "GET", "_lethe/nothing"), 404, "unknown admin path");
  assert.equal(await clockNow(), now);
});

test("without --clock=manual the clock can be read, not moved, and the purge is not on demand", async () => {
  const wall = await startServer();
  after(() => wall.stop());
  const clock = await admin(wall.endpoint, "GET", "_lethe/clock");
  assert.equal(clock.status, 200);
  assert.equal(clock.body.manual, false);
  for (const [method, path] of [["POST", "_lethe/clock"], ["POST", "_lethe/purge"]]) {
    const r = await admin(wall.endpoint, method, path, { advanceSeconds: 60 });
    assertError(r, 404, `${method} ${path}`);
    assert.match(r.body.message, /--clock=manual/);
  }
});
