// Storage accounting through the official JavaScript SDK: a container read
// with populateQuotaInfo reports x-ms-resource-quota and x-ms-resource-usage,
// and expired documents stop counting at the instant they expire, before any
// physical deletion (the server runs with the purger off).

import assert from "node:assert/strict";
import { before, test } from "node:test";
import { expiryMs, fileFixture, sleepUntil } from "../lib/helpers.js";

const { newDatabase } = await fileFixture({ args: ["--disable-purger"] });

let db;
before(async () => {
  db = await newDatabase("quota");
});

/** Returns the usage header's fields as numbers, asserting both headers are there. */
async function usage(container) {
  const res = await container.read({ populateQuotaInfo: true });
  assert.ok(res.headers["x-ms-resource-quota"], "x-ms-resource-quota is missing");
  const raw = res.headers["x-ms-resource-usage"];
  assert.ok(raw, "x-ms-resource-usage is missing");
  return usageFields(raw);
}

test("usage counts live documents and drops expired ones at once", async () => {
  const { container } = await db.containers.create({ id: "c", partitionKey: { paths: ["/pk"] }, defaultTtl: -1 });
  let ts = 0;
  for (let i = 0; i < 3; i++) {
    const { resource } = await container.items.create({ id: `short${i}`, pk: "p", ttl: 2, pad: "x".repeat(2000) });
    ts = Math.max(ts, resource._ts);
  }
  await container.items.create({ id: "kept", pk: "p" });
  const before = await usage(container);
  if (Date.now() < expiryMs(ts - 1, 2)) {
    assert.equal(before.documentsCount, 4);
    assert.ok(before.documentsSize >= 6, `documentsSize ${before.documentsSize} KB for three 2 KB documents`);
  }
  await sleepUntil(expiryMs(ts, 2));
  const after = await usage(container);
  assert.equal(after.documentsCount, 1);
  assert.equal(after.documentsSize, 1, "one small document is 1 KB, rounded up");
});

test("container read headers: quota format, index transformation and lazy indexing progress", async () => {
  const { container } = await db.containers.create({ id: "h", partitionKey: { paths: ["/pk"] } });
  await container.items.create({ id: "a", pk: "p", pad: "x".repeat(1500) });
  const res = await container.read({ populateQuotaInfo: true });
  // Cosmos DB's format: the same fields in the same order, each ended by ';'.
  const order = "functions storedProcedures triggers documentSize documentsSize documentsCount collectionSize";
  for (const name of ["x-ms-resource-quota", "x-ms-resource-usage"]) {
    const raw = res.headers[name];
    assert.match(raw, /^([A-Za-z]+=-?\d+;)+$/, `${name} ${raw}`);
    assert.equal(raw.split(";").filter(Boolean).map((kv) => kv.split("=")[0]).join(" "), order, name);
  }
  const quota = usageFields(res.headers["x-ms-resource-quota"]);
  assert.ok(quota.collectionSize > 0 && quota.documentsSize > 0, "size quotas are positive: clients compare usage with them");
  assert.equal(quota.documentSize, Math.floor(quota.collectionSize / 1024));
  assert.equal(quota.documentsCount, -1);
  const used = usageFields(res.headers["x-ms-resource-usage"]);
  assert.deepEqual([used.documentsCount, used.documentsSize, used.documentSize], [1, 2, 0]);
  assert.ok(used.collectionSize >= used.documentsSize);

  assert.equal(res.headers["x-ms-documentdb-collection-index-transformation-progress"], "100");
  assert.equal(res.headers["x-ms-documentdb-collection-lazy-indexing-progress"], undefined);
  const plain = await container.read();
  assert.equal(plain.headers["x-ms-documentdb-collection-index-transformation-progress"], "100");
  assert.equal(plain.headers["x-ms-resource-quota"], undefined);

  const { container: lazy } = await db.containers.create({ id: "lazy", partitionKey: { paths: ["/pk"] }, indexingPolicy: { indexingMode: "lazy" } });
  const lazyRes = await lazy.read();
  assert.equal(lazyRes.headers["x-ms-documentdb-collection-index-transformation-progress"], "100");
  assert.equal(lazyRes.headers["x-ms-documentdb-collection-lazy-indexing-progress"], "100");
});

/** Parses a quota or usage header into numbers by name. */
function usageFields(raw) {
  return Object.fromEntries(
    raw
      .split(";")
      .filter(Boolean)
      .map((kv) => {
        const [k, v] = kv.split("=");
        return [k, Number(v)];
      }),
  );
}
