// Containers with several partition key ranges, as Cosmos DB gives a
// container provisioned above 10,000 RU/s several physical partitions: the
// SDK's feed ranges, its bulk executor (which hashes each operation's
// partition key itself and sends one batch per range) and its per-range
// session tokens.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startProxy } from "../lib/proxy.js";
import { client, startServer, uid } from "../lib/server.js";

let srv, proxy, cosmos, database;
before(async () => {
  srv = await startServer();
  proxy = await startProxy(srv.endpoint);
  // Session consistency asked for explicitly: only then does the SDK send
  // back the session tokens it keeps per partition key range.
  cosmos = client(proxy.endpoint, { consistencyLevel: "Session" });
  ({ database } = await cosmos.databases.createIfNotExists({ id: uid("ranges") }));
});
after(async () => {
  cosmos.dispose();
  await proxy.close();
  await srv.stop();
});

/** The requests the SDK sent through the proxy since mark, by predicate. */
const sentSince = (mark, pred) => proxy.log.slice(mark).filter(pred);

test("feed ranges: three for 30,000 RU/s, adjacent from \"\" to \"FF\"; one without throughput", async () => {
  const { container: multi } = await database.containers.create({ id: uid("multi"), partitionKey: { paths: ["/pk"] }, throughput: 30000 });
  const ranges = await multi.getFeedRanges();
  assert.equal(ranges.length, 3);
  assert.equal(ranges[0].minInclusive, "");
  assert.equal(ranges[2].maxExclusive, "FF");
  assert.equal(ranges[0].maxExclusive, ranges[1].minInclusive);
  assert.equal(ranges[1].maxExclusive, ranges[2].minInclusive);
  // A query without FROM reads no documents: run from its plan, it goes to
  // one range only, not once per range.
  for (const forceQueryPlan of [false, true]) {
    const { resources } = await multi.items.query("SELECT VALUE 1", { forceQueryPlan }).fetchAll();
    assert.deepEqual(resources, [1], `SELECT VALUE 1 over three ranges, forceQueryPlan ${forceQueryPlan}`);
  }
  const { container: single } = await database.containers.create({ id: uid("single"), partitionKey: { paths: ["/pk"] } });
  assert.equal((await single.getFeedRanges()).length, 1);
});

test("bulk: the SDK routes each operation to its range, and every one lands", async () => {
  const { container } = await database.containers.create({ id: uid("bulk"), partitionKey: { paths: ["/pk"] }, throughput: 30000 });
  const keys = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? i : i % 3 === 1 ? `k${i}` : i % 2 === 0));
  const ops = keys.map((pk, i) => ({ operationType: "Create", partitionKey: pk, resourceBody: { id: `b${i}`, pk, i } }));
  const mark = proxy.log.length;
  const results = await container.items.executeBulkOperations(ops);
  assert.deepEqual(
    results.map((r) => r.response?.statusCode ?? `error ${r.error?.code} ${r.error?.message}`),
    ops.map(() => 201),
  );
  // One batch per range, each carrying its range id and no partition key.
  const batches = sentSince(mark, (e) => e.reqHeaders["x-ms-cosmos-is-batch-request"] === "true");
  const rangeOf = new Map(); // document id -> the range its batch was sent to
  for (const b of batches) {
    assert.equal(b.status, 200, `bulk batch answered ${b.status}: ${b.resBody.slice(0, 300)}`);
    assert.equal(b.reqHeaders["x-ms-documentdb-partitionkey"], undefined);
    const range = b.reqHeaders["x-ms-documentdb-partitionkeyrangeid"];
    assert.ok(["0", "1", "2"].includes(range), `bulk batch sent to range ${range}`);
    assert.ok(b.resHeaders["x-ms-session-token"].startsWith(`${range}:`), `session token ${b.resHeaders["x-ms-session-token"]} of range ${range}`);
    for (const op of JSON.parse(b.reqBody)) rangeOf.set(op.resourceBody.id, range);
  }
  assert.deepEqual(new Set(rangeOf.values()), new Set(["0", "1", "2"]), "the 60 keys spread over the three ranges");

  // Each document reads back, with its own range's session token; the SDK
  // now sends the tokens of all three ranges it has seen.
  for (const [i, pk] of keys.entries()) {
    const id = `b${i}`;
    const before = proxy.log.length;
    const r = await container.item(id, pk).read();
    assert.equal(r.statusCode, 200, `read ${id}`);
    assert.equal(r.resource.i, i);
    const [read] = sentSince(before, (e) => e.method === "GET" && e.path.endsWith(`/docs/${id}`));
    assert.ok(read.resHeaders["x-ms-session-token"].startsWith(`${rangeOf.get(id)}:`), `${id}: token ${read.resHeaders["x-ms-session-token"]}, batch range ${rangeOf.get(id)}`);
    const sent = (read.reqHeaders["x-ms-session-token"] ?? "").split(",").map((t) => t.split(":")[0]);
    assert.deepEqual(new Set(sent), new Set(["0", "1", "2"]), `session token sent with the read of ${id}: ${read.reqHeaders["x-ms-session-token"]}`);
  }

  // The older bulk API takes the same path.
  const legacy = await container.items.bulk(keys.map((pk, i) => ({ operationType: "Upsert", resourceBody: { id: `b${i}`, pk, i, v: 2 } })));
  assert.deepEqual(legacy.map((r) => r.statusCode), keys.map(() => 200));
  const { resources } = await container.items.query("SELECT VALUE COUNT(1) FROM c WHERE c.v = 2").fetchAll();
  assert.deepEqual(resources, [60]);
});
