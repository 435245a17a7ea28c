// Durability across restarts of a server with a data directory.

import assert from "node:assert/strict";
import { after, test } from "node:test";
import { assertGone, assertLive, expiryMs, ids, readFeedAll, sleepUntil } from "../lib/helpers.js";
import { client, makeTempDir, removeDir, startServer, uid } from "../lib/server.js";

const dirs = [];
after(async () => {
  for (const d of dirs) await removeDir(d);
});

/** Starts a server on dataDir with a client; both are cleaned up after the file. */
async function open(dataDir) {
  const srv = await startServer({ dataDir });
  after(() => srv.stop());
  const cosmos = client(srv.endpoint);
  after(() => cosmos.dispose());
  return { srv, cosmos };
}

test("data survives SIGTERM and restart; a ttl keeps counting while the server is down", async () => {
  const dataDir = await makeTempDir();
  dirs.push(dataDir);
  const dbId = uid("db");

  // First life.
  const one = await open(dataDir);
  const { database, resource: dbDef } = await one.cosmos.databases.create({ id: dbId });
  const { container, resource: collDef } = await database.containers.create({
    id: "c",
    partitionKey: { paths: ["/pk"] },
    defaultTtl: -1,
  });
  const keep = (await container.items.create({ id: "keep", pk: "p", nested: { a: [1, "ü"] } })).resource;
  const patched = (await container.item("keep", "p").patch([{ op: "set", path: "/v", value: 1 }])).resource;
  const other = (await container.items.create({ id: "other", pk: 7, ttl: 3600 })).resource;
  await container.items.create({ id: "deleted", pk: "p" });
  await container.item("deleted", "p").delete();
  const short = (await container.items.create({ id: "short", pk: "p", ttl: 3 })).resource;
  await assertLive(container, "short", "p");
  const before = [keep, patched, other, short];

  const exit = await one.srv.stop();
  assert.deepEqual(exit, { code: 0, signal: null }, "SIGTERM is a clean shutdown");

  // Down while "short" expires.
  await sleepUntil(expiryMs(short._ts, 3));

  // Second life, on a new port.
  const two = await open(dataDir);
  const db2 = two.cosmos.database(dbId);
  assert.equal((await db2.read()).resource._rid, dbDef._rid);
  const c2 = db2.container("c");
  const def2 = (await c2.read()).resource;
  assert.equal(def2._rid, collDef._rid);
  assert.equal(def2.defaultTtl, -1);
  assert.deepEqual(def2.partitionKey, collDef.partitionKey);

  const keep2 = await assertLive(c2, "keep", "p");
  assert.deepEqual(keep2, patched, "the document is exactly as it was");
  assert.deepEqual(await assertLive(c2, "other", 7), other);
  await assertGone(c2, "deleted", "p");
  await assertGone(c2, "short", "p", "ttl 3 kept counting while the server was down");
  assert.deepEqual(ids(await readFeedAll(c2)), ["keep", "other"]);

  // New writes get fresh etags and rids, never one handed out before the restart.
  const fresh = (await c2.items.create({ id: "fresh", pk: "p" })).resource;
  const keep3 = (await c2.item("keep", "p").replace({ id: "keep", pk: "p", v: 2 })).resource;
  const oldEtags = new Set(before.map((d) => d._etag));
  const oldRids = new Set(before.map((d) => d._rid));
  assert.ok(!oldEtags.has(fresh._etag) && !oldEtags.has(keep3._etag), "etags are not reused after a restart");
  assert.ok(!oldRids.has(fresh._rid), "document rids are not reused after a restart");
  // ...so a stale etag from before the restart still fails its precondition.
  await assert.rejects(
    () => c2.item("keep", "p").replace({ id: "keep", pk: "p" }, { accessCondition: { type: "IfMatch", condition: patched._etag } }),
    (err) => err.code === 412,
  );
  // And "short"'s id is free again.
  assert.equal((await c2.items.create({ id: "short", pk: "p" })).statusCode, 201);
  assert.deepEqual(ids(await readFeedAll(c2)), ["keep", "other", "fresh", "short"]);
});

test("acknowledged writes survive SIGKILL", async () => {
  const dataDir = await makeTempDir();
  dirs.push(dataDir);
  const one = await open(dataDir);
  const { database } = await one.cosmos.databases.create({ id: "d" });
  const { container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } });
  const written = [];
  for (let i = 0; i < 20; i++) written.push((await container.items.create({ id: `i${i}`, pk: "p", i })).resource);
  await container.item("i3", "p").delete();
  const exit = await one.srv.kill();
  assert.equal(exit.signal, "SIGKILL");

  const two = await open(dataDir);
  const c2 = two.cosmos.database("d").container("c");
  for (const d of written) {
    if (d.id === "i3") await assertGone(c2, "i3", "p");
    else assert.deepEqual(await assertLive(c2, d.id, "p"), d);
  }
});

test("a change feed continuation taken before a restart resumes after it, with nothing lost or repeated", async () => {
  const { ChangeFeedStartFrom, StatusCodes } = await import("@azure/cosmos");
  const dataDir = await makeTempDir();
  dirs.push(dataDir);
  const dbId = uid("db");

  /** Reads until 304; returns the ids read and the last continuation. */
  async function drain(it) {
    const got = [];
    for (;;) {
      const res = await it.readNext();
      if (res.statusCode === StatusCodes.NotModified) return { got, token: res.continuationToken };
      got.push(...ids(res.result));
    }
  }

  const one = await open(dataDir);
  const { database } = await one.cosmos.databases.create({ id: dbId });
  const { container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } });
  for (const id of ["a", "b"]) await container.items.create({ id, pk: "p" });
  const first = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
  assert.deepEqual(first.got, ["a", "b"]);
  await container.items.create({ id: "c", pk: "p" }); // written before the stop, read after
  assert.deepEqual(await one.srv.stop(), { code: 0, signal: null });

  const two = await open(dataDir);
  const c2 = two.cosmos.database(dbId).container("c");
  await c2.items.create({ id: "d", pk: "p" });
  const after = await drain(c2.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(first.token) }));
  assert.deepEqual(after.got, ["c", "d"], "the write before the stop and the one after, each once, in order");
});
