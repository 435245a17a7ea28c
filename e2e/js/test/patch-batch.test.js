// Partial document update (patch) and transactional batch through the official
// JavaScript SDK.

import assert from "node:assert/strict";
import { before, test } from "node:test";
import { fileFixture, rejectsWithCode } from "../lib/helpers.js";
import { uid } from "../lib/server.js";

const { newDatabase } = await fileFixture();

let container;
before(async () => {
  const db = await newDatabase();
  ({ container } = await db.containers.create({ id: uid("pb"), partitionKey: { paths: ["/pk"] } }));
});

const strip = ({ _rid, _self, _etag, _ts, _attachments, ...rest }) => rest;

test("patch: add, set, replace, remove, incr, move", async () => {
  const id = uid("patch");
  const orig = (
    await container.items.create({
      id,
      pk: "p",
      a: 1,
      n: 5,
      f: 1.5,
      arr: [1, 2],
      obj: { x: 1 },
      old: "moved value",
      gone: true,
    })
  ).resource;

  const first = await container.item(id, "p").patch([
    { op: "add", path: "/b", value: { deep: [true] } },
    { op: "add", path: "/arr/1", value: 9 },
    { op: "add", path: "/arr/-", value: 3 },
    { op: "set", path: "/obj/y", value: "why" },
    { op: "set", path: "/a", value: "now a string" },
    { op: "replace", path: "/obj/x", value: 10 },
  ]);
  assert.equal(first.statusCode, 200);
  const res = await container.item(id, "p").patch([
    { op: "remove", path: "/gone" },
    { op: "incr", path: "/n", value: 3 },
    { op: "incr", path: "/f", value: -0.5 },
    { op: "incr", path: "/fresh", value: 7 },
    { op: "move", from: "/old", path: "/new" },
  ]);
  assert.equal(res.statusCode, 200);
  assert.ok(res.requestCharge > 0);
  assert.deepEqual(strip(res.resource), {
    id,
    pk: "p",
    a: "now a string",
    n: 8,
    f: 1,
    arr: [1, 9, 2, 3],
    obj: { x: 10, y: "why" },
    new: "moved value",
    b: { deep: [true] },
    fresh: 7,
  });
  assert.notEqual(res.resource._etag, orig._etag);
  assert.equal(res.resource._rid, orig._rid);
  assert.ok(res.resource._ts >= orig._ts);
  assert.deepEqual((await container.item(id, "p").read()).resource, res.resource, "the patch is stored");

  // replace and remove need the path to exist; patch cannot touch the partition key.
  await rejectsWithCode(() => container.item(id, "p").patch([{ op: "replace", path: "/nope", value: 1 }]), 400);
  await rejectsWithCode(() => container.item(id, "p").patch([{ op: "remove", path: "/nope" }]), 400);
  await rejectsWithCode(() => container.item(id, "p").patch([{ op: "incr", path: "/a", value: 1 }]), 400);
  await rejectsWithCode(() => container.item(id, "p").patch([{ op: "set", path: "/pk", value: "other" }]), 400);
  // Cosmos DB allows at most 10 operations per patch.
  const eleven = Array.from({ length: 11 }, (_, i) => ({ op: "set", path: `/k${i}`, value: i }));
  await rejectsWithCode(() => container.item(id, "p").patch(eleven), 400);
  // A failing operation fails the whole patch: the earlier ones are not applied.
  await rejectsWithCode(
    () =>
      container.item(id, "p").patch([
        { op: "set", path: "/partial", value: 1 },
        { op: "remove", path: "/nope" },
      ]),
    400,
  );
  assert.deepEqual((await container.item(id, "p").read()).resource, res.resource, "failed patches change nothing");
});

test("patch: conditional (true applies, false is 412)", async () => {
  const id = uid("cpatch");
  await container.items.create({ id, pk: "p", x: 1, count: 0 });

  const ok = await container.item(id, "p").patch({
    condition: "FROM c WHERE c.x = 1",
    operations: [{ op: "incr", path: "/count", value: 1 }],
  });
  assert.equal(ok.statusCode, 200);
  assert.equal(ok.resource.count, 1);

  await rejectsWithCode(
    () =>
      container.item(id, "p").patch({
        condition: "FROM c WHERE c.x = 2",
        operations: [{ op: "incr", path: "/count", value: 1 }],
      }),
    412,
  );
  const after = (await container.item(id, "p").read()).resource;
  assert.equal(after.count, 1, "a false condition applies nothing");
  assert.equal(after._etag, ok.resource._etag);

  // The condition sees the document before the patch.
  const ok2 = await container.item(id, "p").patch({
    condition: "FROM c WHERE c.count = 1 AND c.x > 0",
    operations: [{ op: "set", path: "/x", value: 5 }],
  });
  assert.equal(ok2.resource.x, 5);
});

test("batch: success returns every operation's status", async () => {
  const pk = uid("batch");
  await container.items.create({ id: "read-me", pk, v: 1 });
  await container.items.create({ id: "replace-me", pk, v: 1 });
  await container.items.create({ id: "patch-me", pk, n: 1 });
  await container.items.create({ id: "delete-me", pk });
  await container.items.create({ id: "upsert-existing", pk, v: 1 });

  const res = await container.items.batch(
    [
      { operationType: "Create", resourceBody: { id: "new", pk, v: 1 } },
      { operationType: "Upsert", resourceBody: { id: "upsert-new", pk, v: 1 } },
      { operationType: "Upsert", resourceBody: { id: "upsert-existing", pk, v: 2 } },
      { operationType: "Read", id: "read-me" },
      { operationType: "Replace", id: "replace-me", resourceBody: { id: "replace-me", pk, v: 2 } },
      { operationType: "Patch", id: "patch-me", resourceBody: { operations: [{ op: "incr", path: "/n", value: 41 }] } },
      { operationType: "Delete", id: "delete-me" },
    ],
    pk,
  );
  assert.equal(res.code, 200);
  assert.deepEqual(
    res.result.map((r) => r.statusCode),
    [201, 201, 200, 200, 200, 200, 204],
  );
  assert.equal(res.result[0].resourceBody.id, "new");
  assert.equal(typeof res.result[0].eTag, "string");
  assert.equal(res.result[0].eTag, res.result[0].resourceBody._etag);
  assert.equal(res.result[3].resourceBody.v, 1, "the read returns the document");
  assert.equal(res.result[5].resourceBody.n, 42);
  for (const r of res.result) assert.ok(r.requestCharge > 0, "every operation has a charge");

  assert.equal((await container.item("new", pk).read()).resource.v, 1);
  assert.equal((await container.item("upsert-new", pk).read()).resource.v, 1);
  assert.equal((await container.item("upsert-existing", pk).read()).resource.v, 2);
  assert.equal((await container.item("replace-me", pk).read()).resource.v, 2);
  assert.equal((await container.item("patch-me", pk).read()).resource.n, 42);
  assert.equal((await container.item("delete-me", pk).read()).statusCode, 404);
});

test("batch: one failing operation fails the batch, nothing applied", async () => {
  const pk = uid("fbatch");
  await container.items.create({ id: "exists", pk, v: 1 });
  await container.items.create({ id: "keep", pk, v: 1 });

  const res = await container.items.batch(
    [
      { operationType: "Create", resourceBody: { id: "a", pk } },
      { operationType: "Replace", id: "keep", resourceBody: { id: "keep", pk, v: 2 } },
      { operationType: "Create", resourceBody: { id: "exists", pk, v: 2 } },
      { operationType: "Upsert", resourceBody: { id: "b", pk } },
    ],
    pk,
  );
  assert.equal(res.code, 207);
  assert.deepEqual(
    res.result.map((r) => r.statusCode),
    [424, 424, 409, 424],
  );
  assert.equal((await container.item("a", pk).read()).statusCode, 404, "nothing applied");
  assert.equal((await container.item("b", pk).read()).statusCode, 404, "nothing applied");
  assert.equal((await container.item("keep", pk).read()).resource.v, 1, "nothing applied");
  assert.equal((await container.item("exists", pk).read()).resource.v, 1);

  // A stale ifMatch and a read of a missing document fail batches the same way.
  const keep = (await container.item("keep", pk).read()).resource;
  const stale = await container.items.batch(
    [
      { operationType: "Upsert", resourceBody: { id: "c", pk } },
      { operationType: "Replace", id: "keep", ifMatch: '"not-the-etag"', resourceBody: { id: "keep", pk, v: 3 } },
    ],
    pk,
  );
  assert.deepEqual(
    stale.result.map((r) => r.statusCode),
    [424, 412],
  );
  const missing = await container.items.batch(
    [
      { operationType: "Read", id: "no-such-doc" },
      { operationType: "Create", resourceBody: { id: "d", pk } },
    ],
    pk,
  );
  assert.deepEqual(
    missing.result.map((r) => r.statusCode),
    [404, 424],
  );
  assert.equal((await container.item("c", pk).read()).statusCode, 404);
  assert.equal((await container.item("d", pk).read()).statusCode, 404);
  assert.equal((await container.item("keep", pk).read()).resource._etag, keep._etag);
});
