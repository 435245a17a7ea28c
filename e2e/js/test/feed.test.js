// Reading every item of a container page by page.
//
// Note: in @azure/cosmos 4.9.3, container.items.readAll() is NOT a read feed.
// It is `this.query("SELECT * from c", options)` (dist/esm/client/Item/Items.js),
// so it sends a query (POST .../docs, Content-Type: application/query+json,
// x-ms-documentdb-isquery: true) and, in parallel, a query-plan request
// (x-ms-cosmos-is-query-plan-request: True). The readAll tests below therefore
// need Lethe's SQL query support; until the server answers "SELECT * from c"
// they fail with 400 "Lethe does not support SQL queries yet".
//
// The server's real read feed (GET .../docs with x-ms-max-item-count and
// x-ms-continuation) is reached through the SDK's feed iterator without query
// text (lib/helpers.js readFeedIterator) and tested separately.

import assert from "node:assert/strict";
import { before, test } from "node:test";
import { fileFixture, ids, readFeedAll, readFeedIterator } from "../lib/helpers.js";
import { uid } from "../lib/server.js";

const { newDatabase } = await fileFixture();

const N = 10;
let container;
let inserted; // ids in insertion order
before(async () => {
  const db = await newDatabase();
  ({ container } = await db.containers.create({ id: uid("feed"), partitionKey: { paths: ["/pk"] } }));
  inserted = [];
  // Ids deliberately not in sorted order, spread over partitions, so that
  // neither id order nor partition order can pass for insertion order.
  for (let i = 0; i < N; i++) {
    const id = `doc-${(i * 7) % N}-${"zyxwvutsrq"[i]}`;
    await container.items.create({ id, pk: `p${i % 3}`, i });
    inserted.push(id);
  }
});

/** Follows fetchNext until hasMoreResults is false; returns the pages. */
async function pages(iterator) {
  const out = [];
  while (iterator.hasMoreResults()) {
    const page = await iterator.fetchNext();
    out.push(page);
    assert.ok(out.length <= 2 * N, "the feed does not end");
  }
  return out;
}

test("readAll: fetchNext pages of maxItemCount 3 follow the continuation to the end", async () => {
  const it = container.items.readAll({ maxItemCount: 3 });
  const ps = await pages(it);
  const got = ps.flatMap((p) => ids(p.resources));
  assert.deepEqual(got, inserted, "every document exactly once, in insertion order");
  for (const p of ps) assert.ok(p.resources.length <= 3, "no page exceeds maxItemCount");
  assert.deepEqual(
    ps.map((p) => p.resources.length).filter((n) => n > 0),
    [3, 3, 3, 1],
  );
  assert.equal(it.hasMoreResults(), false);
  for (const p of ps) assert.ok(p.requestCharge > 0, "every page has a request charge");
});

test("readAll: fetchAll returns every document once, in insertion order", async () => {
  const { resources } = await container.items.readAll({ maxItemCount: 3 }).fetchAll();
  assert.deepEqual(ids(resources), inserted);
  const { resources: all } = await container.items.readAll().fetchAll();
  assert.deepEqual(ids(all), inserted);
  assert.equal(all.find((d) => d.id === inserted[4]).i, 4, "documents come back whole");
});

test("read feed (GET .../docs): pages of 3 follow x-ms-continuation to the end", async () => {
  const it = readFeedIterator(container, 3);
  const ps = await pages(it);
  assert.deepEqual(
    ps.map((p) => p.resources.length),
    [3, 3, 3, 1],
  );
  for (const p of ps.slice(0, -1)) {
    assert.equal(p.hasMoreResults, true);
    assert.equal(typeof p.continuationToken, "string", "a page with more to come carries a continuation");
  }
  assert.equal(ps.at(-1).hasMoreResults, false);
  assert.equal(ps.at(-1).continuationToken, undefined, "the last page has no continuation");
  assert.deepEqual(
    ps.flatMap((p) => ids(p.resources)),
    inserted,
    "every document exactly once, in insertion order",
  );
  for (const p of ps) assert.ok(p.requestCharge > 0);

  // fetchAll over the same feed, with the default page size and with pages of 1.
  assert.deepEqual(ids((await readFeedIterator(container).fetchAll()).resources), inserted);
  assert.deepEqual(ids(await readFeedAll(container, 1)), inserted);
});

test("read feed: deleted documents disappear, new ones come last, and a continuation survives writes", async () => {
  const db = await newDatabase();
  const { container: c } = await db.containers.create({ id: uid("feed2"), partitionKey: { paths: ["/pk"] } });
  for (const id of ["a", "b", "c", "d", "e"]) await c.items.create({ id, pk: id });
  const it = readFeedIterator(c, 2);
  const first = await it.fetchNext();
  assert.deepEqual(ids(first.resources), ["a", "b"]);
  // Writes between pages: delete one not yet served, add one.
  await c.item("c", "c").delete();
  await c.items.create({ id: "f", pk: "f" });
  const rest = [];
  while (it.hasMoreResults()) rest.push(...ids((await it.fetchNext()).resources));
  assert.deepEqual(rest, ["d", "e", "f"]);
  assert.deepEqual(ids(await readFeedAll(c)), ["a", "b", "d", "e", "f"]);
});
