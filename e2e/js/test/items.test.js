// Item point operations and conditional requests through the official
// JavaScript SDK.

import assert from "node:assert/strict";
import { before, test } from "node:test";
import { fileFixture, rejectsWithCode } from "../lib/helpers.js";
import { uid } from "../lib/server.js";

const { newDatabase } = await fileFixture();

let container;
before(async () => {
  const db = await newDatabase();
  ({ container } = await db.containers.create({ id: uid("items"), partitionKey: { paths: ["/pk"] } }));
});

/** Asserts the system properties Cosmos DB adds to every document. */
/** Asserts a document's system properties; notBefore is the wall clock (epoch seconds) before it was written. */
function assertSystemProperties(doc, notBefore) {
  assert.equal(typeof doc._rid, "string");
  assert.equal(Buffer.from(doc._rid, "base64").length, 16, "document _rid decodes to 16 bytes");
  assert.equal(typeof doc._self, "string");
  assert.ok(doc._self.startsWith("dbs/") && doc._self.endsWith(`/docs/${doc._rid}/`), `_self ${doc._self}`);
  assert.equal(typeof doc._etag, "string");
  assert.match(doc._etag, /^".+"$/, "_etag is a quoted string");
  assert.equal(typeof doc._ts, "number");
  assert.ok(Number.isInteger(doc._ts), "_ts is whole seconds");
  const now = Date.now() / 1000;
  assert.ok(doc._ts <= Math.ceil(now) && doc._ts >= Math.floor(notBefore), `_ts ${doc._ts}: written between ${notBefore} and ${now}`);
  assert.equal(doc._attachments, "attachments/");
}

test("items: create, read, replace, upsert, delete", async () => {
  const t0 = Date.now() / 1000;
  const id = uid("item");
  const body = { id, pk: "p1", name: "first", nested: { a: [1, 2, { b: null }] }, n: 1.5 };
  const created = await container.items.create(body);
  assert.equal(created.statusCode, 201);
  assert.ok(created.requestCharge > 0, "requestCharge on create");
  const doc = created.resource;
  for (const [k, v] of Object.entries(body)) assert.deepEqual(doc[k], v, `property ${k} round-trips`);
  assertSystemProperties(doc, t0);
  assert.equal(created.etag, doc._etag, "etag header equals _etag");

  const read = await container.item(id, "p1").read();
  assert.equal(read.statusCode, 200);
  assert.ok(read.requestCharge > 0, "requestCharge on read");
  assert.deepEqual(read.resource, doc, "read returns exactly what create returned");

  const t1 = Date.now() / 1000;
  const replaced = await container.item(id, "p1").replace({ id, pk: "p1", name: "second" });
  assert.equal(replaced.statusCode, 200);
  assert.ok(replaced.requestCharge > 0);
  assert.equal(replaced.resource.name, "second");
  assert.equal(replaced.resource.nested, undefined, "replace is a full replacement");
  assert.notEqual(replaced.resource._etag, doc._etag, "a write changes _etag");
  assert.equal(replaced.resource._rid, doc._rid, "replace keeps _rid");
  assert.ok(replaced.resource._ts >= doc._ts);
  assertSystemProperties(replaced.resource, t1);

  const upNew = await container.items.upsert({ id: id + "-u", pk: "p1", v: 1 });
  assert.equal(upNew.statusCode, 201, "upsert of a new id creates");
  assert.ok(upNew.requestCharge > 0);
  const upOld = await container.items.upsert({ id: id + "-u", pk: "p1", v: 2 });
  assert.equal(upOld.statusCode, 200, "upsert of an existing id replaces");
  assert.equal(upOld.resource.v, 2);
  assert.equal(upOld.resource._rid, upNew.resource._rid);
  assert.equal((await container.item(id + "-u", "p1").read()).resource.v, 2);

  const del = await container.item(id, "p1").delete();
  assert.equal(del.statusCode, 204);
  assert.ok(del.requestCharge > 0);
  assert.ok(del.resource == null, "a delete returns no document");
  const gone = await container.item(id, "p1").read();
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.resource, undefined);
  // Deleted means gone for creates too: the id is free again.
  assert.equal((await container.items.create({ id, pk: "p1" })).statusCode, 201);
});

test("items: 404 on missing, 409 on duplicate create", async () => {
  const id = uid("missing");
  const r = await container.item(id, "p").read();
  assert.equal(r.statusCode, 404, "the SDK reports a missing item as statusCode 404");
  assert.equal(r.resource, undefined);
  await rejectsWithCode(() => container.item(id, "p").replace({ id, pk: "p" }), 404);
  await rejectsWithCode(() => container.item(id, "p").delete(), 404);
  await rejectsWithCode(() => container.item(id, "p").patch([{ op: "set", path: "/a", value: 1 }]), 404);

  await container.items.create({ id, pk: "p", v: 1 });
  // Same id in the same partition: conflict. The error body is JSON, so the
  // SDK's error carries the server's code and message.
  const err = await rejectsWithCode(() => container.items.create({ id, pk: "p", v: 2 }), 409);
  assert.equal(err.body?.code, "Conflict");
  assert.equal(typeof err.body?.message, "string");
  assert.equal((await container.item(id, "p").read()).resource.v, 1, "a failed create changes nothing");
  // Same id in another partition: a different document.
  assert.equal((await container.items.create({ id, pk: "q", v: 3 })).statusCode, 201);
  assert.equal((await container.item(id, "q").read()).resource.v, 3);
  assert.equal((await container.item(id, "p").read()).resource.v, 1);
  // Reading with the wrong partition key does not find it.
  assert.equal((await container.item(id, "zzz").read()).statusCode, 404);
});

test("items: partition key values of several types", async () => {
  const values = [
    'quote " and \\ backslash',
    "unicode ü 漢字 😀",
    "",
    42,
    -7,
    3.25,
    0,
    true,
    false,
    null,
  ];
  const id = uid("pkv");
  for (const [i, pk] of values.entries()) {
    const c = await container.items.create({ id, pk, i });
    assert.equal(c.statusCode, 201, `create with pk ${JSON.stringify(pk)}`);
    assert.deepEqual(c.resource.pk, pk);
  }
  // A document without the partition key property: its own partition, distinct from null.
  const none = await container.items.create({ id, i: "none" });
  assert.equal(none.statusCode, 201, "create without the pk property");

  for (const [i, pk] of values.entries()) {
    const r = await container.item(id, pk).read();
    assert.equal(r.statusCode, 200, `read with pk ${JSON.stringify(pk)}`);
    assert.equal(r.resource.i, i, `pk ${JSON.stringify(pk)} finds its own document`);
  }
  assert.equal((await container.item(id).read()).resource.i, "none", "undefined pk finds the document without pk");

  // Different types of equal-looking values are different keys.
  assert.equal((await container.item(id, "42").read()).statusCode, 404, '"42" is not 42');
  assert.equal((await container.item(id, "true").read()).statusCode, 404, '"true" is not true');
  assert.equal((await container.item(id, "null").read()).statusCode, 404, '"null" is not null');

  // Replace and delete address the right document too.
  const rep = await container.item(id, 3.25).replace({ id, pk: 3.25, i: "replaced" });
  assert.equal(rep.statusCode, 200);
  assert.equal((await container.item(id, 3.25).read()).resource.i, "replaced");
  assert.equal((await container.item(id, null).delete()).statusCode, 204);
  assert.equal((await container.item(id, null).read()).statusCode, 404);
  assert.equal((await container.item(id).read()).resource.i, "none", "deleting pk null left pk-less alone");
  assert.equal((await container.item(id, false).read()).resource.i, values.indexOf(false));
});

test("items: ids with spaces, unicode and URL-significant characters", async () => {
  const names = ["with space", "  lead and trail  ", "ünïcödé 漢字 😀", "a+b=c&d", "100%", "semi;colon", "x'y\"z", "tab\there", "~!@$^*()[]{},.:"];
  for (const id of names) {
    const c = await container.items.create({ id, pk: "ids", tag: id });
    assert.equal(c.statusCode, 201, `create ${JSON.stringify(id)}`);
    assert.equal(c.resource.id, id);
  }
  for (const id of names) {
    const r = await container.item(id, "ids").read();
    assert.equal(r.statusCode, 200, `read ${JSON.stringify(id)}`);
    assert.equal(r.resource.id, id);
    assert.equal(r.resource.tag, id);
    const rep = await container.item(id, "ids").replace({ id, pk: "ids", tag: id, v: 2 });
    assert.equal(rep.statusCode, 200, `replace ${JSON.stringify(id)}`);
  }
  // "a+b" must not be read as "a b".
  assert.equal((await container.item("a b=c&d", "ids").read()).statusCode, 404);
  for (const id of names) {
    assert.equal((await container.item(id, "ids").delete()).statusCode, 204, `delete ${JSON.stringify(id)}`);
    assert.equal((await container.item(id, "ids").read()).statusCode, 404);
  }
});

test("items: ids the compute gateway accepts, through every operation the SDK allows", async () => {
  // The SDK refuses '/', '\\' and '#' in ids client-side, except in batch
  // operations (isItemResourceValid, validateItemResourceId), and sends '?'
  // unescaped in paths (encodeURI): those ids are reached by batch and query
  // ('?' by create and upsert too), every other id by every operation.
  const pointable = ["IdEnding%20", "Special%E9%B1%80", "trail  ", "line\nfeed", "cr\rhere", "WithUnicode鱀"];
  const batchOnly = ["Disallowed/Chars", "back\\slash", "hash#tag", "what?x=1"];
  const byQuery = async (id) =>
    (
      await container.items
        .query({ query: "SELECT * FROM c WHERE c.id = @id", parameters: [{ name: "@id", value: id }] }, { partitionKey: id })
        .fetchAll()
    ).resources.map((d) => [d.id, d.v]);
  for (const id of [...pointable, "what?x=1"]) {
    const c = await container.items.create({ id, pk: id, v: 1 });
    assert.equal(c.statusCode, 201, `create ${JSON.stringify(id)}`);
    assert.equal(c.resource.id, id);
    const u = await container.items.upsert({ id, pk: id, v: 2 });
    assert.equal(u.statusCode, 200, `upsert ${JSON.stringify(id)}`);
    assert.deepEqual(await byQuery(id), [[id, 2]], `query ${JSON.stringify(id)}`);
  }
  for (const id of pointable) {
    const item = container.item(id, id);
    assert.equal((await item.read()).resource.id, id, `read ${JSON.stringify(id)}`);
    assert.equal((await item.replace({ id, pk: id, v: 3 })).statusCode, 200, `replace ${JSON.stringify(id)}`);
    const p = await item.patch([{ op: "incr", path: "/v", value: 10 }]);
    assert.equal(p.resource.v, 13, `patch ${JSON.stringify(id)}`);
    assert.equal((await item.delete()).statusCode, 204, `delete ${JSON.stringify(id)}`);
    assert.equal((await item.read()).statusCode, 404);
  }
  for (const id of batchOnly) {
    const ops = [
      { operationType: "Upsert", resourceBody: { id, pk: id, v: 3 } },
      { operationType: "Read", id },
      { operationType: "Replace", id, resourceBody: { id, pk: id, v: 4 } },
      { operationType: "Patch", id, resourceBody: { operations: [{ op: "incr", path: "/v", value: 10 }] } },
    ];
    const res = await container.items.batch(ops, id);
    assert.deepEqual(res.result.map((r) => r.statusCode), [id.includes("?") ? 200 : 201, 200, 200, 200], `batch on ${JSON.stringify(id)}`);
    assert.deepEqual(await byQuery(id), [[id, 14]], `query ${JSON.stringify(id)} after the batch`);
    const del = await container.items.batch([{ operationType: "Delete", id }], id);
    assert.deepEqual(del.result.map((r) => r.statusCode), [204], `batch delete of ${JSON.stringify(id)}`);
    assert.deepEqual(await byQuery(id), [], `${JSON.stringify(id)} deleted by the batch`);
  }
});

test("items: system properties sent by the client are not taken over", async () => {
  const id = uid("sys");
  const t0 = Date.now() / 1000;
  const c = await container.items.create({ id, pk: "s", _ts: 5, _etag: '"forged"', _rid: "forged", _self: "forged" });
  assert.notEqual(c.resource._ts, 5);
  assert.notEqual(c.resource._etag, '"forged"');
  assertSystemProperties(c.resource, t0);
});

test("conditional requests: IfMatch on replace, upsert and delete; IfNoneMatch on read", async () => {
  const id = uid("cond");
  const v1 = (await container.items.create({ id, pk: "c", v: 1 })).resource;
  const v2 = (await container.item(id, "c").replace({ id, pk: "c", v: 2 }, { accessCondition: { type: "IfMatch", condition: v1._etag } })).resource;
  assert.equal(v2.v, 2, "IfMatch with the current etag applies");
  assert.notEqual(v2._etag, v1._etag);

  const stale = { accessCondition: { type: "IfMatch", condition: v1._etag } };
  await rejectsWithCode(() => container.item(id, "c").replace({ id, pk: "c", v: 3 }, stale), 412);
  await rejectsWithCode(() => container.items.upsert({ id, pk: "c", v: 3 }, stale), 412);
  await rejectsWithCode(() => container.item(id, "c").delete(stale), 412);
  await rejectsWithCode(() => container.item(id, "c").patch([{ op: "set", path: "/v", value: 3 }], stale), 412);
  const still = (await container.item(id, "c").read()).resource;
  assert.equal(still.v, 2, "failed preconditions change nothing");
  assert.equal(still._etag, v2._etag);

  // If-None-Match: a matching etag is 304 with no body, another etag 200.
  const notModified = await container.item(id, "c").read({ accessCondition: { type: "IfNoneMatch", condition: v2._etag } });
  assert.equal(notModified.statusCode, 304);
  assert.ok(notModified.resource == null, "a 304 carries no document");
  const modified = await container.item(id, "c").read({ accessCondition: { type: "IfNoneMatch", condition: v1._etag } });
  assert.equal(modified.statusCode, 200);
  assert.equal(modified.resource.v, 2);

  const up = await container.items.upsert({ id, pk: "c", v: 4 }, { accessCondition: { type: "IfMatch", condition: v2._etag } });
  assert.equal(up.statusCode, 200);
  assert.equal(up.resource.v, 4);
  const del = await container.item(id, "c").delete({ accessCondition: { type: "IfMatch", condition: up.resource._etag } });
  assert.equal(del.statusCode, 204);
  // The document is gone: If-Match on it is a 404, not a 412.
  await rejectsWithCode(
    () => container.item(id, "c").replace({ id, pk: "c" }, { accessCondition: { type: "IfMatch", condition: up.resource._etag } }),
    404,
  );
});
