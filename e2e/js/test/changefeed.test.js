// The change feed, latest-version mode, through the JavaScript SDK's pull
// model (container.items.getChangeFeedIterator): every start option, the
// continuation round trip, scoping by partition key and by feed range, 304s
// when caught up, and what replaces, deletes and TTL expiry do to the feed.
// The server runs with --clock=manual and --disable-purger, so that expiry is
// decided by the server's rule alone, never by a purge.

import assert from "node:assert/strict";
import { before, test } from "node:test";
import { ChangeFeedStartFrom } from "@azure/cosmos";
import { drainChangeFeed, fileFixture, ids } from "../lib/helpers.js";
import { EMULATOR_KEY, uid } from "../lib/server.js";

const { srv, newDatabase } = await fileFixture({ args: ["--clock=manual", "--disable-purger"] });

async function advance(seconds) {
  const res = await fetch(new URL("_lethe/clock", srv.endpoint), {
    method: "POST",
    headers: { "content-type": "application/json", "x-lethe-master-key": EMULATOR_KEY },
    body: JSON.stringify({ advanceSeconds: seconds }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.now;
}

/** drainChangeFeed, returning the ids read; every item carries _lsn. */
async function drain(it) {
  const { got, token } = await drainChangeFeed(it, (doc) => assert.equal(typeof doc._lsn, "number", "every item carries _lsn"));
  return { got: ids(got), token };
}

let container;
before(async () => {
  const db = await newDatabase();
  ({ container } = await db.containers.create({ id: uid("cf"), partitionKey: { paths: ["/pk"] }, defaultTtl: -1 }));
  for (const [id, pk] of [["a", "p"], ["b", "p"], ["c", "q"]]) await container.items.create({ id, pk });
});

test("change feed: from the beginning, each live document once in write order, then 304", async () => {
  const it = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 2 });
  const { got } = await drain(it);
  assert.deepEqual(got, ["a", "b", "c"]);
});

test("change feed: a continuation resumes after the last page; replaces move a document to the end, deletes and expiries never appear", async () => {
  const db = await newDatabase();
  const { container: c } = await db.containers.create({ id: uid("cf"), partitionKey: { paths: ["/pk"] }, defaultTtl: -1 });
  for (const id of ["x", "y", "z"]) await c.items.create({ id, pk: "p" });
  await c.items.create({ id: "short", pk: "p", ttl: 5 });
  const first = await drain(c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
  assert.deepEqual(first.got, ["x", "y", "z", "short"]);

  await c.item("x", "p").replace({ id: "x", pk: "p", v: 2 });
  await c.item("y", "p").delete();
  await advance(5); // "short" expires
  const next = await drain(c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(first.token) }));
  assert.deepEqual(next.got, ["x"], "after the continuation: the replaced document only");
  const all = await drain(c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
  assert.deepEqual(all.got, ["z", "x"], "deleted and expired documents are gone, x comes at its last write");
});

test("change feed: from now sees only later writes; from a time sees writes at or after it", async () => {
  const it = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
  assert.deepEqual((await drain(it)).got, []);
  const t = (await advance(10)) * 1000;
  await container.items.create({ id: "later", pk: "p" });
  assert.deepEqual((await drain(it)).got, ["later"], "the same iterator sees the write made after it caught up");
  const since = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Time(new Date(t)) });
  assert.deepEqual((await drain(since)).got, ["later"]);
});

test("change feed: scoped to a partition key, and to each feed range", async () => {
  const byKey = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("q") }));
  assert.deepEqual(byKey.got, ["c"]);

  // 30,000 RU/s: three partition key ranges, so three feed ranges.
  const db = await newDatabase();
  const { container: c } = await db.containers.create({ id: uid("cf"), partitionKey: { paths: ["/pk"] }, throughput: 30000 });
  const written = [];
  for (let i = 0; i < 30; i++) {
    await c.items.create({ id: `d${i}`, pk: `k${i}` });
    written.push(`d${i}`);
  }
  const ranges = await c.getFeedRanges();
  assert.equal(ranges.length, 3);
  const perRange = [];
  for (const r of ranges) {
    const { got } = await drain(c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(r) }));
    assert.ok(got.length > 0 && got.length < written.length, `range ${JSON.stringify(r)} read ${got.length} of ${written.length}`);
    perRange.push(...got);
  }
  assert.deepEqual([...perRange].sort(), [...written].sort(), "the feed ranges together read the whole container, each document once");
  const whole = await drain(c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 7 }));
  assert.deepEqual([...whole.got].sort(), [...written].sort(), "the whole container, read across its ranges");
});
