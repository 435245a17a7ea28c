// Databases and containers through the official JavaScript SDK.

import assert from "node:assert/strict";
import { test } from "node:test";
import { fileFixture, rejectsWithCode } from "../lib/helpers.js";
import { startProxy } from "../lib/proxy.js";
import { client, uid } from "../lib/server.js";

const { srv, cosmos, newDatabase } = await fileFixture();

const DEFAULT_INDEXING_POLICY = {
  indexingMode: "consistent",
  automatic: true,
  includedPaths: [{ path: "/*" }],
  excludedPaths: [{ path: '/"_etag"/?' }],
};

test("databases: createIfNotExists, read, delete", async () => {
  const id = uid("db");
  const first = await cosmos.databases.createIfNotExists({ id });
  assert.equal(first.statusCode, 201);
  assert.equal(first.resource.id, id);
  assert.equal(typeof first.resource._rid, "string");
  assert.match(first.resource._self, /^dbs\/.+\/$/);
  assert.equal(typeof first.resource._etag, "string");
  assert.equal(typeof first.resource._ts, "number");
  assert.ok(first.requestCharge > 0, "requestCharge on create");

  const again = await cosmos.databases.createIfNotExists({ id });
  assert.equal(again.statusCode, 200, "createIfNotExists of an existing database reads it");
  assert.equal(again.resource._rid, first.resource._rid);

  await rejectsWithCode(() => cosmos.databases.create({ id }), 409);

  const read = await cosmos.database(id).read();
  assert.equal(read.statusCode, 200);
  assert.equal(read.resource.id, id);
  assert.equal(read.resource._rid, first.resource._rid);
  assert.ok(read.requestCharge > 0);

  const del = await cosmos.database(id).delete();
  assert.equal(del.statusCode, 204);
  await rejectsWithCode(() => cosmos.database(id).read(), 404);
  await rejectsWithCode(() => cosmos.database(id).delete(), 404);

  // A deleted database can be created again from scratch.
  const re = await cosmos.databases.createIfNotExists({ id });
  assert.equal(re.statusCode, 201);
  await cosmos.database(id).delete();
});

test("deleting a database deletes its containers and items", async () => {
  const db = await newDatabase();
  const { container } = await db.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } });
  await container.items.create({ id: "a", pk: "p" });
  await db.delete();
  await rejectsWithCode(() => container.read(), 404);
  // Same names again: nothing of the old container may show through.
  const db2 = (await cosmos.databases.create({ id: db.id })).database;
  const { container: c2 } = await db2.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } });
  const r = await c2.item("a", "p").read();
  assert.equal(r.statusCode, 404);
  await db2.delete();
});

test("containers: createIfNotExists with a partition key; read echoes the definition", async () => {
  const db = await newDatabase();
  const id = uid("c");
  const created = await db.containers.createIfNotExists({ id, partitionKey: { paths: ["/pk"] } });
  assert.equal(created.statusCode, 201);
  const def = created.resource;
  assert.equal(def.id, id);
  assert.deepEqual(def.partitionKey.paths, ["/pk"]);
  assert.equal(def.partitionKey.kind, "Hash");
  assert.deepEqual(def.indexingPolicy, DEFAULT_INDEXING_POLICY);
  assert.equal(def.defaultTtl, undefined, "no defaultTtl unless set");
  assert.equal(typeof def._rid, "string");
  assert.equal(Buffer.from(def._rid, "base64").length, 8, "container _rid decodes to 8 bytes");
  assert.match(def._self, /^dbs\/.+\/colls\/.+\/$/);
  assert.equal(def._docs, "docs/");
  assert.equal(typeof def._etag, "string");
  assert.equal(typeof def._ts, "number");

  const read = await db.container(id).read();
  assert.equal(read.statusCode, 200);
  assert.deepEqual(read.resource.partitionKey, def.partitionKey);
  assert.deepEqual(read.resource.indexingPolicy, DEFAULT_INDEXING_POLICY);
  assert.equal(read.resource._rid, def._rid);
  assert.equal(read.resource._etag, def._etag);

  const again = await db.containers.createIfNotExists({ id, partitionKey: { paths: ["/pk"] } });
  assert.equal(again.statusCode, 200);
  assert.equal(again.resource._rid, def._rid);

  await rejectsWithCode(() => db.containers.create({ id, partitionKey: { paths: ["/pk"] } }), 409);

  await db.container(id).items.create({ id: "a", pk: "p" });
  const del = await db.container(id).delete();
  assert.equal(del.statusCode, 204);
  await rejectsWithCode(() => db.container(id).read(), 404);
  await rejectsWithCode(() => db.container(id).items.create({ id: "b", pk: "p" }), 404);

  // Re-created under the same name, the container is new and empty.
  const re = await db.containers.create({ id, partitionKey: { paths: ["/pk"] } });
  assert.notEqual(re.resource._rid, def._rid);
  assert.equal((await re.container.item("a", "p").read()).statusCode, 404, "nothing of the deleted container shows through");
});

test("containers: without a partition key the JS SDK uses /_partitionKey and sends [{}]", async () => {
  const db = await newDatabase();
  // A proxy records the wire, to check what this test relies on.
  const proxy = await startProxy(srv.endpoint);
  const viaProxy = client(proxy.endpoint);
  try {
    const pdb = viaProxy.database(db.id);
    const id = uid("nopk");
    const { resource: def, container } = await pdb.containers.createIfNotExists({ id });
    assert.deepEqual(def.partitionKey.paths, ["/_partitionKey"]);
    assert.equal(def.partitionKey.kind, "Hash");
    const read = await container.read();
    assert.deepEqual(read.resource.partitionKey, def.partitionKey);

    const created = await container.items.create({ id: "doc1", v: 1 });
    assert.equal(created.statusCode, 201);
    assert.equal(created.resource._partitionKey, undefined, "the SDK does not add _partitionKey");
    const got = await container.item("doc1").read();
    assert.equal(got.statusCode, 200);
    assert.equal(got.resource.v, 1);
    const replaced = await container.item("doc1").replace({ id: "doc1", v: 2 });
    assert.equal(replaced.statusCode, 200);
    assert.equal(replaced.resource.v, 2);
    const upserted = await container.items.upsert({ id: "doc2", v: 3 });
    assert.equal(upserted.statusCode, 201);
    const del = await container.item("doc1").delete();
    assert.equal(del.statusCode, 204);
    assert.equal((await container.item("doc1").read()).statusCode, 404);
    assert.equal((await container.item("doc2").read()).resource.v, 3);

    const docRequests = proxy.log.filter((e) => /\/docs(\/|$)/.test(e.path));
    assert.ok(docRequests.length >= 6);
    for (const e of docRequests) {
      assert.equal(e.reqHeaders["x-ms-documentdb-partitionkey"], "[{}]", `${e.method} ${e.path}`);
    }
  } finally {
    viaProxy.dispose();
    await proxy.close();
  }
});

test("containers: hierarchical partition keys (MultiHash)", async () => {
  const db = await newDatabase();
  const id = uid("hier");
  const { resource: def, container } = await db.containers.createIfNotExists({
    id,
    partitionKey: { paths: ["/tenant", "/user", "/session"], kind: "MultiHash", version: 2 },
  });
  assert.deepEqual(def.partitionKey.paths, ["/tenant", "/user", "/session"]);
  assert.equal(def.partitionKey.kind, "MultiHash");
  assert.equal(def.partitionKey.version, 2);
  const read = await container.read();
  assert.deepEqual(read.resource.partitionKey, def.partitionKey);

  // Same id under different full keys: distinct documents.
  const a = await container.items.create({ id: "x", tenant: "t1", user: "u1", session: 1, v: "a" });
  const b = await container.items.create({ id: "x", tenant: "t1", user: "u2", session: 1, v: "b" });
  assert.equal(a.statusCode, 201);
  assert.equal(b.statusCode, 201);
  await rejectsWithCode(
    () => container.items.create({ id: "x", tenant: "t1", user: "u1", session: 1 }),
    409,
  );
  assert.equal((await container.item("x", ["t1", "u1", 1]).read()).resource.v, "a");
  assert.equal((await container.item("x", ["t1", "u2", 1]).read()).resource.v, "b");
  assert.equal((await container.item("x", ["t1", "u3", 1]).read()).statusCode, 404);

  const rep = await container.item("x", ["t1", "u1", 1]).replace({ id: "x", tenant: "t1", user: "u1", session: 1, v: "a2" });
  assert.equal(rep.statusCode, 200);
  const del = await container.item("x", ["t1", "u2", 1]).delete();
  assert.equal(del.statusCode, 204);
  assert.equal((await container.item("x", ["t1", "u1", 1]).read()).resource.v, "a2");
  assert.equal((await container.item("x", ["t1", "u2", 1]).read()).statusCode, 404);
});

test("containers: replace changes defaultTtl (set, -1, removed)", async () => {
  const db = await newDatabase();
  const { container, resource } = await db.containers.create({ id: uid("c"), partitionKey: { paths: ["/pk"] } });
  assert.equal(resource.defaultTtl, undefined);

  const r1 = await container.replace({ ...resource, defaultTtl: 30 });
  assert.equal(r1.statusCode, 200);
  assert.equal(r1.resource.defaultTtl, 30);
  assert.notEqual(r1.resource._etag, resource._etag, "a replace changes the container's _etag");
  assert.equal(r1.resource._rid, resource._rid);
  assert.equal((await container.read()).resource.defaultTtl, 30);

  const r2 = await container.replace({ ...r1.resource, defaultTtl: -1 });
  assert.equal(r2.resource.defaultTtl, -1);
  assert.equal((await container.read()).resource.defaultTtl, -1);

  const { defaultTtl, ...withoutTtl } = r2.resource;
  const r3 = await container.replace(withoutTtl);
  assert.equal(r3.resource.defaultTtl, undefined);
  const after = (await container.read()).resource;
  assert.equal(after.defaultTtl, undefined, "removing defaultTtl turns TTL off");
  assert.deepEqual(after.partitionKey, resource.partitionKey);
  assert.deepEqual(after.indexingPolicy, DEFAULT_INDEXING_POLICY);
});

test("containers: the partition key cannot change on replace", async () => {
  const db = await newDatabase();
  const { container, resource } = await db.containers.create({ id: uid("c"), partitionKey: { paths: ["/pk"] } });
  await rejectsWithCode(
    () => container.replace({ ...resource, partitionKey: { paths: ["/other"], kind: "Hash", version: 2 } }),
    400,
  );
  assert.deepEqual((await container.read()).resource.partitionKey.paths, ["/pk"]);
});

// defaultTtl validation and the indexing-mode rule are in ttl.test.js.
