// The change feed's all versions and deletes mode through the JavaScript SDK
// (ChangeFeedMode.AllVersionsAndDeletes on a container with a
// ChangeFeedPolicy): every operation type as its own record, deletes with the
// id, the partition key and the deleted version, TTL expiries exactly once at
// their instant without the purge (and no second time after it), a lowered
// defaultTtl expiring many documents at once, scoping, continuations across a
// restart, and retention. The server runs with --clock=manual and
// --disable-purger: expiry is decided by the server's rule alone. The mode
// serves whole seconds only, so a test advances the clock a second before it
// expects the changes of the current one.

import assert from "node:assert/strict";
import { after, test } from "node:test";
import {
  ChangeFeedMode,
  ChangeFeedPolicy,
  ChangeFeedRetentionTimeSpan,
  ChangeFeedStartFrom,
} from "@azure/cosmos";
import { drainChangeFeed, eventually, fileFixture, rejectsWithCode } from "../lib/helpers.js";
import { EMULATOR_KEY, client, makeTempDir, removeDir, startServer, uid } from "../lib/server.js";

const { srv, newDatabase } = await fileFixture({ args: ["--clock=manual", "--disable-purger"] });

/** Calls the admin API of the server at endpoint (POST body, or GET when body is null); returns the JSON answer. */
async function admin(endpoint, path, body) {
  const res = await fetch(new URL(path, endpoint), {
    method: body === null ? "GET" : "POST",
    headers: { "content-type": "application/json", "x-lethe-master-key": EMULATOR_KEY },
    body: body === null ? undefined : JSON.stringify(body ?? {}),
  });
  const answer = await res.json();
  assert.equal(res.status, 200, JSON.stringify(answer));
  return answer;
}

const advance = async (seconds, endpoint = srv.endpoint) =>
  (await admin(endpoint, "_lethe/clock", { advanceSeconds: seconds })).now;
const purge = async (endpoint = srv.endpoint) => (await admin(endpoint, "_lethe/purge")).purged;

const retention = (minutes) => new ChangeFeedPolicy(ChangeFeedRetentionTimeSpan.fromMinutes(minutes));

/** Creates a container partitioned on /pk that keeps the log for an hour. */
async function logged(extra = {}) {
  const db = await newDatabase();
  const { container } = await db.containers.create({
    id: uid("av"),
    partitionKey: { paths: ["/pk"] },
    changeFeedPolicy: retention(60),
    ...extra,
  });
  return container;
}

/** An all-versions iterator over container from start (a ChangeFeedStartFrom). */
function allVersions(container, start, maxItemCount) {
  return container.items.getChangeFeedIterator({
    changeFeedStartFrom: start,
    changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    maxItemCount,
  });
}

/** drainChangeFeed: every record has the wire shape of its operation. */
const drain = (it) => drainChangeFeed(it, checkShape);

function checkShape(r) {
  const m = r.metadata;
  assert.ok(["create", "replace", "delete"].includes(m.operationType), JSON.stringify(r));
  assert.equal(typeof m.lsn, "number");
  assert.equal(typeof m.crts, "number");
  if (m.operationType === "delete") {
    assert.deepEqual(r.current, {}, "a delete has no current version");
    assert.equal(typeof m.id, "string");
    assert.equal(typeof m.timeToLiveExpired, "boolean");
    assert.equal(r.previous.id, m.id, "a delete carries the deleted version");
    assert.equal(r.previous._lsn, m.previousImageLSN);
  } else {
    assert.equal(r.current._lsn, m.lsn, "current carries its _lsn");
    assert.equal(m.crts, r.current._ts, "a write's crts is its _ts");
  }
  if (m.operationType === "replace") assert.equal(typeof m.previousImageLSN, "number");
}

/** One line per record: "create a", "delete b (ttl)". */
const summary = (records) =>
  records.map((r) => {
    const m = r.metadata;
    const id = m.operationType === "delete" ? m.id : r.current.id;
    return `${m.operationType} ${id}${m.timeToLiveExpired ? " (ttl)" : ""}`;
  });

/** Asserts each record's previousImageLSN names the record before it for its document. */
function assertChained(records) {
  const last = new Map();
  for (const r of records) {
    const m = r.metadata;
    const id = m.operationType === "delete" ? m.id : r.current.id;
    if (m.operationType === "create") assert.ok(!last.has(id) || last.get(id) === null, `a create of live ${id}`);
    else assert.equal(m.previousImageLSN, last.get(id), `${m.operationType} ${id} follows its last version`);
    last.set(id, m.operationType === "delete" ? null : m.lsn);
  }
}

test("all versions: every create, replace, upsert, patch, batch operation and delete is a record of its own, in commit order", async () => {
  const c = await logged({ defaultTtl: -1 });
  const it = allVersions(c, ChangeFeedStartFrom.Now());
  assert.deepEqual((await drain(it)).got, [], "nothing yet");

  await c.items.create({ id: "a", pk: "p", v: 1 });
  await c.item("a", "p").replace({ id: "a", pk: "p", v: 2 });
  await c.items.upsert({ id: "b", pk: "p", v: 1 });
  await c.items.upsert({ id: "b", pk: "p", v: 2 });
  await c.item("a", "p").patch([{ op: "set", path: "/v", value: 3 }]);
  const batch = await c.items.batch(
    [
      { operationType: "Create", resourceBody: { id: "c", pk: "p" } },
      { operationType: "Replace", id: "b", resourceBody: { id: "b", pk: "p", v: 3 } },
      { operationType: "Delete", id: "a" },
    ],
    "p",
  );
  assert.equal(batch.code, 200);
  await c.item("c", "p").delete();
  const ts = (await c.items.create({ id: "d", pk: "q", n: 1 })).resource._ts;

  assert.deepEqual((await drain(it)).got, [], "the current second is not served before it is over");
  await advance(1);
  const { got, token } = await drain(it);
  assert.deepEqual(summary(got), [
    "create a",
    "replace a",
    "create b",
    "replace b",
    "replace a",
    "create c",
    "replace b",
    "delete a",
    "delete c",
    "create d",
  ]);
  assertChained(got);
  const lsns = got.map((r) => r.metadata.lsn);
  assert.deepEqual(lsns, [...lsns].sort((x, y) => x - y), "LSNs grow in commit order");
  assert.ok(got.every((r) => r.metadata.crts <= ts));
  const delA = got[7];
  assert.equal(delA.metadata.timeToLiveExpired, false);
  assert.deepEqual(delA.metadata.partitionKey, { pk: "p" });
  assert.equal(delA.previous.v, 3, "the deleted version is the patched one");
  assert.equal(got[4].current.v, 3);
  assert.equal(got[4].previous, undefined, "replaces carry no previous, as in Cosmos DB");

  // From the beginning (Lethe's extension) reads the same, and so does a
  // continuation taken before them.
  assert.deepEqual(summary((await drain(allVersions(c, ChangeFeedStartFrom.Beginning(), 3))).got), summary(got));
  const eTs = (await c.items.create({ id: "e", pk: "p" })).resource._ts;
  assert.ok(eTs > ts);
  await advance(1);
  assert.deepEqual(summary((await drain(allVersions(c, ChangeFeedStartFrom.Continuation(token)))).got), ["create e"]);
  assert.deepEqual(summary((await drain(allVersions(c, ChangeFeedStartFrom.Time(new Date(eTs * 1000))))).got), ["create e"]);
});

test("all versions: a TTL expiry is one delete record at the expiry instant, there without the purge, not repeated by it; a write after expiry is a create", async () => {
  const c = await logged({ defaultTtl: -1 });
  const it = allVersions(c, ChangeFeedStartFrom.Now());
  await drain(it);
  const x = (await c.items.create({ id: "x", pk: "p", ttl: 5 })).resource;
  const y = (await c.items.create({ id: "y", pk: "p", ttl: 3 })).resource;
  await c.items.create({ id: "z", pk: "p" });
  await advance(1);
  const created = (await drain(it)).got;
  assert.deepEqual(summary(created), ["create x", "create y", "create z"]);

  await advance(2); // y expires now: not served before the second is over
  assert.deepEqual((await drain(it)).got, []);
  await advance(1);
  let { got } = await drain(it);
  assert.deepEqual(summary(got), ["delete y (ttl)"]);
  assert.equal(got[0].metadata.crts, y._ts + 3, "crts is the expiry instant");
  assert.equal(got[0].metadata.previousImageLSN, created[1].metadata.lsn);
  assert.equal(got[0].metadata.lsn, created[1].metadata.lsn + 1, "an expiry's LSN is its version's plus one");
  assert.deepEqual(got[0].metadata.partitionKey, { pk: "p" });
  assert.deepEqual(got[0].previous, created[1].current, "the expired version, whole");

  await c.items.upsert({ id: "y", pk: "p", again: true }); // over the expired, unpurged version
  await advance(2); // x expires
  ({ got } = await drain(it));
  assert.deepEqual(summary(got), ["create y", "delete x (ttl)"]);
  assert.equal(got[1].metadata.crts, x._ts + 5);

  // The server is shared: other tests' expired documents may go too.
  assert.ok((await purge()) >= 1, "the purge removes x (y's expired version went with the upsert)");
  assert.deepEqual((await drain(it)).got, [], "the purge adds nothing");
  const all = summary((await drain(allVersions(c, ChangeFeedStartFrom.Beginning()))).got);
  assert.deepEqual(all, ["create x", "create y", "create z", "delete y (ttl)", "create y", "delete x (ttl)"]);
});

test("all versions: a defaultTtl lowered expires many documents at once, each once, at the change, also for a reader already past their _ts + ttl", async () => {
  const c = await logged({ defaultTtl: -1 });
  const docs = [];
  for (let i = 0; i < 40; i++) {
    docs.push((await c.items.create({ id: `d${i}`, pk: `k${i % 4}` })).resource);
    if (i % 10 === 9) await advance(1);
  }
  await advance(100);
  const it = allVersions(c, ChangeFeedStartFrom.Now(), 7);
  await drain(it); // the reader is past every _ts + 30
  const { resource } = await c.read();
  const changed = (await c.replace({ ...resource, defaultTtl: 30 })).resource;
  await c.items.create({ id: "fresh", pk: "k0" });
  await advance(1);
  const { got } = await drain(it);
  const expired = got.filter((r) => r.metadata.timeToLiveExpired);
  assert.equal(expired.length, docs.length, summary(got).join(", "));
  assert.deepEqual(new Set(expired.map((r) => r.metadata.id)), new Set(docs.map((d) => d.id)));
  for (const r of expired) assert.equal(r.metadata.crts, changed._ts, "at the instant of the change");
  assert.deepEqual(summary(got).filter((s) => !s.endsWith("(ttl)")), ["create fresh"]);

  assert.ok((await purge()) >= docs.length);
  assert.deepEqual((await drain(it)).got, [], "the purge adds nothing");
  const all = (await drain(allVersions(c, ChangeFeedStartFrom.Beginning(), 25))).got;
  assert.equal(all.filter((r) => r.metadata.timeToLiveExpired).length, docs.length, "each expiry once");
});

test("all versions: scoped to a partition key and to each feed range", async () => {
  const db = await newDatabase();
  // 30,000 RU/s: three partition key ranges, so three feed ranges.
  const { container: c } = await db.containers.create({
    id: uid("av"),
    partitionKey: { paths: ["/pk"] },
    throughput: 30000,
    changeFeedPolicy: retention(10),
  });
  const written = [];
  for (let i = 0; i < 30; i++) {
    await c.items.create({ id: `d${i}`, pk: `k${i}` });
    if (i % 3 === 0) await c.item(`d${i}`, `k${i}`).delete();
    written.push(`d${i}`);
  }
  await advance(1);
  const byKey = await drain(allVersions(c, ChangeFeedStartFrom.Beginning("k3")));
  assert.deepEqual(summary(byKey.got), ["create d3", "delete d3"]);
  const ranges = await c.getFeedRanges();
  assert.equal(ranges.length, 3);
  const perRange = [];
  for (const r of ranges) {
    const { got } = await drain(allVersions(c, ChangeFeedStartFrom.Beginning(r), 4));
    assert.ok(got.length > 0 && got.length < 40, `range ${JSON.stringify(r)} read ${got.length} records`);
    assertChained(got);
    perRange.push(...summary(got));
  }
  const whole = summary((await drain(allVersions(c, ChangeFeedStartFrom.Beginning(), 9))).got);
  assert.equal(whole.length, 40);
  assert.deepEqual([...perRange].sort(), [...whole].sort(), "the feed ranges together read the whole container, each record once");
});

test("all versions: needs a change feed policy; the policy is echoed, kept by a replace without it, and switched off by 0", async () => {
  const db = await newDatabase();
  const { container: plain } = await db.containers.create({ id: uid("plain"), partitionKey: { paths: ["/pk"] } });
  await rejectsWithCode(() => allVersions(plain, ChangeFeedStartFrom.Now()).readNext(), 400, /changeFeedPolicy/);

  const c = await logged();
  const def = (await c.read()).resource;
  assert.deepEqual(def.changeFeedPolicy, { retentionDuration: 60 });
  const { changeFeedPolicy, ...withoutPolicy } = def;
  assert.deepEqual((await c.replace(withoutPolicy)).resource.changeFeedPolicy, changeFeedPolicy, "a replace that does not know the policy keeps it");
  await c.replace({ ...def, changeFeedPolicy: retention(0) });
  await rejectsWithCode(() => allVersions(c, ChangeFeedStartFrom.Now()).readNext(), 400, /changeFeedPolicy/);
  await rejectsWithCode(() => db.containers.create({ id: uid("bad"), partitionKey: { paths: ["/pk"] }, changeFeedPolicy: { retentionDuration: 1.5 } }), 400, /retentionDuration/);
});

test("all versions: changes older than the retention are dropped; a continuation from before them is refused as too old", async () => {
  const c = await logged({ changeFeedPolicy: retention(1) });
  const it = allVersions(c, ChangeFeedStartFrom.Now());
  const { token } = await drain(it);
  await c.items.create({ id: "old", pk: "p" });
  await advance(1);
  assert.deepEqual(summary((await drain(allVersions(c, ChangeFeedStartFrom.Continuation(token)))).got), ["create old"]);

  await advance(150);
  await purge(); // also trims the logs past their retention, as the background purger does
  await rejectsWithCode(() => allVersions(c, ChangeFeedStartFrom.Continuation(token)).readNext(), 400, /older than the retained changes/);
  assert.deepEqual((await drain(allVersions(c, ChangeFeedStartFrom.Beginning()))).got, [], "the old create is gone from the log");
  await c.items.create({ id: "new", pk: "p" });
  await advance(1);
  assert.deepEqual(summary((await drain(allVersions(c, ChangeFeedStartFrom.Beginning()))).got), ["create new"]);
});

test("all versions: a continuation taken before a restart resumes after it; an expiry while the server is down appears once, also after a purge and another restart", async () => {
  const dataDir = await makeTempDir();
  after(() => removeDir(dataDir));
  const open = async () => {
    const s = await startServer({ dataDir, args: ["--clock=manual", "--disable-purger"] });
    const cosmos = client(s.endpoint);
    return { s, cosmos, c: cosmos.database("db").container("c") };
  };

  let life = await open();
  const { database } = await life.cosmos.databases.create({ id: "db" });
  await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] }, defaultTtl: 10, changeFeedPolicy: retention(60) });
  const doc = (await life.c.items.create({ id: "short", pk: "p" })).resource;
  await life.c.items.create({ id: "kept", pk: "p", ttl: -1 });
  await advance(1, life.s.endpoint);
  let { got, token } = await drain(allVersions(life.c, ChangeFeedStartFrom.Beginning()));
  assert.deepEqual(summary(got), ["create short", "create kept"]);
  life.cosmos.dispose();
  assert.deepEqual(await life.s.stop(), { code: 0, signal: null });

  life = await open();
  await life.c.items.upsert({ id: "kept", pk: "p", ttl: -1, v: 2 });
  await advance(10, life.s.endpoint); // "short" expires
  ({ got, token } = await drain(allVersions(life.c, ChangeFeedStartFrom.Continuation(token))));
  assert.deepEqual(summary(got), ["replace kept", "delete short (ttl)"]);
  assert.equal(got[1].metadata.crts, doc._ts + 10);
  assert.equal(await purge(life.s.endpoint), 1);
  life.cosmos.dispose();
  // A kill may lose the purge's unsynced work with its expiry records: the
  // expiries are then read from the documents again, the same records.
  await life.s.kill();

  life = await open();
  // On PostgreSQL the killed server's registration lives on until it lapses
  // (10 s), and its change feed floor stands still meanwhile: the feed
  // serves only changes below it, or 6 s old. Wait until the server sees
  // itself alone.
  await eventually("the killed server's registration to lapse", async () => {
    assert.equal((await admin(life.s.endpoint, "_lethe/gateway", null)).otherGateways, 0);
  }, 30_000);
  ({ got } = await drain(allVersions(life.c, ChangeFeedStartFrom.Continuation(token))));
  assert.deepEqual(got, [], "nothing new, nothing twice");
  ({ got } = await drain(allVersions(life.c, ChangeFeedStartFrom.Beginning())));
  assert.deepEqual(summary(got), ["create short", "create kept", "replace kept", "delete short (ttl)"]);
  life.cosmos.dispose();
  await life.s.stop();
});
