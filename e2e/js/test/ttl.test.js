// Time to live in real time, through the official JavaScript SDK, against the
// contract in shared/TTL-SPEC.md.
//
// Timing: `_ts` is whole seconds and a document is expired when
// _ts + ttl <= server time (seconds). The tests compute every deadline from the
// `_ts` the server returned (helpers.expiryMs), so a document with ttl n is
// checked alive at second _ts + n - 1 (+150 ms) and gone at second _ts + n
// (+150 ms): exact to the second, without sleeping longer than needed.
// Independent cases run as concurrent subtests, so the file takes about as long
// as its longest case (~5 s).

import assert from "node:assert/strict";
import { before, test } from "node:test";
import {
  assertGone,
  assertLive,
  assertLiveUntil,
  expiryMs,
  fileFixture,
  ids,
  readFeedAll,
  rejectsWithCode,
  sleepUntil,
} from "../lib/helpers.js";
import { uid } from "../lib/server.js";

const { newDatabase } = await fileFixture();

let db;
before(async () => {
  db = await newDatabase("ttl");
});

const TTL_MESSAGE = (v) =>
  `The input ttl '${v}' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.`;
const DEFAULT_TTL_MESSAGE = (v) =>
  `The input defaultTtl '${v}' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.`;

/** Creates a container with a /pk partition key and the given defaultTtl (undefined: TTL off). */
async function ttlContainer(defaultTtl) {
  const def = { id: uid("c"), partitionKey: { paths: ["/pk"] } };
  if (defaultTtl !== undefined) def.defaultTtl = defaultTtl;
  const { container, resource } = await db.containers.create(def);
  assert.equal(resource.defaultTtl, defaultTtl);
  return container;
}

/** Replaces a container's definition with defaultTtl changed (undefined removes it). */
async function setDefaultTtl(container, defaultTtl) {
  const { resource } = await container.read();
  const { defaultTtl: _old, ...rest } = resource;
  const def = defaultTtl === undefined ? rest : { ...rest, defaultTtl };
  const r = await container.replace(def);
  assert.equal(r.statusCode, 200);
  assert.equal(r.resource.defaultTtl, defaultTtl);
  return r.resource;
}

const withTtl = (body, ttl) => (ttl === undefined ? body : { ...body, ttl });

/**
 * One cell of the TTL-SPEC matrix: a document ttl under a container default.
 * expires: seconds after _ts at which the document must be gone, or null.
 */
async function runCell(container, cell, pk, longest) {
  const { docTtl, expires } = cell;
  const made = {};
  for (const s of ["a", "ups", "cre"]) {
    const r = await container.items.create(withTtl({ id: `${pk}-${s}`, pk, orig: true }, docTtl));
    assert.equal(r.statusCode, 201);
    made[s] = r.resource;
  }
  const tss = Object.values(made).map((d) => d._ts);
  const minTs = Math.min(...tss);
  const maxTs = Math.max(...tss);
  for (const d of Object.values(made)) {
    if (expires === null) await assertLive(container, d.id, pk, `${pk}: ${d.id} right after create`);
    else await assertLiveUntil(container, d.id, pk, (d._ts + expires) * 1000, `${pk}: ${d.id} right after create`);
  }

  // Fresh documents written after expiry never expire, so the feed check at the
  // end sees a stable set.
  const fresh = (s) => ({ id: `${pk}-${s}`, pk, fresh: true, ttl: -1 });
  const a = made.a;

  if (expires !== null) {
    // Alive up to the last second of its life...
    await sleepUntil(expiryMs(minTs, expires - 1));
    for (const d of Object.values(made)) {
      await assertLiveUntil(container, d.id, pk, (d._ts + expires) * 1000, `${pk}: ${d.id} one second before expiry`);
    }
    // ...and gone for every operation from the second it expires.
    await sleepUntil(expiryMs(maxTs, expires));
    await assertGone(container, a.id, pk, `${pk}: read after expiry`);
    await rejectsWithCode(() => container.item(a.id, pk).replace(withTtl({ id: a.id, pk }, docTtl)), 404);
    await rejectsWithCode(
      () => container.item(a.id, pk).replace({ id: a.id, pk }, { accessCondition: { type: "IfMatch", condition: a._etag } }),
      404,
    );
    await rejectsWithCode(() => container.item(a.id, pk).patch([{ op: "set", path: "/x", value: 1 }]), 404);
    await rejectsWithCode(() => container.item(a.id, pk).delete(), 404);
    await assertGone(container, a.id, pk, `${pk}: still gone after failed writes`);

    const up = await container.items.upsert(fresh("ups"));
    assert.equal(up.statusCode, 201, `${pk}: upsert over an expired document creates`);
    assert.equal(up.resource.orig, undefined, `${pk}: nothing of the expired document survives an upsert`);
    assert.equal(up.resource.fresh, true);
    assert.notEqual(up.resource._etag, made.ups._etag);
    const cr = await container.items.create(fresh("cre"));
    assert.equal(cr.statusCode, 201, `${pk}: create of an expired document's id succeeds`);
    assert.equal(cr.resource.orig, undefined);
    assert.equal((await assertLive(container, `${pk}-ups`, pk)).fresh, true);
    assert.equal((await assertLive(container, `${pk}-cre`, pk)).fresh, true);
    return [`${pk}-ups`, `${pk}-cre`];
  }

  // Never expires: still there well after every ttl used in the matrix.
  await sleepUntil(expiryMs(maxTs, longest, 300));
  for (const d of Object.values(made)) {
    const live = await assertLive(container, d.id, pk, `${pk}: ${d.id} must never expire`);
    assert.equal(live._etag, d._etag);
    assert.deepEqual(live.ttl, docTtl, `${pk}: ttl is kept as data`);
  }
  const rep = await container.item(a.id, pk).replace(withTtl({ id: a.id, pk, v: 2 }, docTtl));
  assert.equal(rep.statusCode, 200);
  const up = await container.items.upsert(withTtl({ id: made.ups.id, pk, v: 2 }, docTtl));
  assert.equal(up.statusCode, 200, `${pk}: upsert of a live document replaces it`);
  await rejectsWithCode(() => container.items.create(withTtl({ id: made.cre.id, pk }, docTtl)), 409);
  return [a.id, made.ups.id, made.cre.id];
}

test("TTL in real time", { concurrency: true }, async (t) => {
  const subtests = [];

  subtests.push(
    t.test("the TTL-SPEC matrix: doc ttl absent/-1/n x container defaultTtl absent/-1/n", async () => {
      // container defaultTtl -> [doc ttl, seconds until expiry or null]
      const LONGEST = 4;
      const matrix = {
        off: { defaultTtl: undefined, cells: [[undefined, null], [-1, null], [2, null]] },
        minus1: { defaultTtl: -1, cells: [[undefined, null], [-1, null], [2, 2]] },
        // n' = 2: the document's own ttl overrides it upward (4) ...
        d2: { defaultTtl: 2, cells: [[undefined, 2], [-1, null], [4, 4]] },
        // ... and n' = 4: downward (2).
        d4: { defaultTtl: 4, cells: [[undefined, 4], [-1, null], [2, 2]] },
      };
      const containers = {};
      for (const [name, m] of Object.entries(matrix)) containers[name] = await ttlContainer(m.defaultTtl);

      const expectedLive = {};
      await Promise.all(
        Object.entries(matrix).flatMap(([name, m]) =>
          m.cells.map(async ([docTtl, expires]) => {
            const pk = `${name}.ttl${docTtl ?? "absent"}`;
            const live = await runCell(containers[name], { docTtl, expires }, pk, LONGEST);
            (expectedLive[name] ??= []).push(...live);
          }),
        ),
      );

      // The read feed never shows an expired document; every live one exactly once.
      for (const [name, c] of Object.entries(containers)) {
        const got = ids(await readFeedAll(c, 2));
        assert.equal(new Set(got).size, got.length, `${name}: no duplicates in the feed`);
        assert.deepEqual([...got].sort(), expectedLive[name].sort(), `${name}: read feed shows exactly the live documents`);
      }
    }),
  );

  subtests.push(
    t.test("readAll never returns expired documents", async () => {
      const c = await ttlContainer(2);
      const docs = [];
      for (const [id, ttl] of [["x1", undefined], ["keep", -1], ["x2", undefined], ["long", 3600]]) {
        docs.push((await c.items.create(withTtl({ id, pk: id }, ttl))).resource);
      }
      const before = ids((await c.items.readAll({ maxItemCount: 1 }).fetchAll()).resources);
      assert.deepEqual(before, ["x1", "keep", "x2", "long"]);
      await sleepUntil(expiryMs(Math.max(...docs.map((d) => d._ts)), 2));
      const after = ids((await c.items.readAll({ maxItemCount: 1 }).fetchAll()).resources);
      assert.deepEqual(after, ["keep", "long"]);
    }),
  );

  subtests.push(
    t.test("read feed (GET .../docs) never returns expired documents, across pages", async () => {
      const c = await ttlContainer(2);
      const docs = [];
      for (const [id, ttl] of [["x1", undefined], ["keep", -1], ["x2", 2], ["x3", undefined], ["long", 3600], ["x4", undefined]]) {
        docs.push((await c.items.create(withTtl({ id, pk: "same" }, ttl))).resource);
      }
      assert.deepEqual(ids(await readFeedAll(c, 1)), ["x1", "keep", "x2", "x3", "long", "x4"]);
      await sleepUntil(expiryMs(Math.max(...docs.map((d) => d._ts)), 2));
      assert.deepEqual(ids(await readFeedAll(c, 1)), ["keep", "long"]);
      assert.deepEqual(ids(await readFeedAll(c)), ["keep", "long"]);
    }),
  );

  subtests.push(
    t.test("changing defaultTtl applies to existing documents at once", async () => {
      const c = await ttlContainer(3600);
      const old = (await c.items.create({ id: "old", pk: "p" })).resource;
      await c.items.create({ id: "own-never", pk: "p", ttl: -1 });
      await c.items.create({ id: "own-long", pk: "p", ttl: 3600 });
      // Let "old" get at least one second old, then shorten the default to 1 s.
      await sleepUntil(expiryMs(old._ts, 1, 50));
      await assertLive(c, "old", "p");
      await setDefaultTtl(c, 1);
      await assertGone(c, "old", "p", "a document older than the new default is expired at once");
      await assertLive(c, "own-never", "p");
      await assertLive(c, "own-long", "p");
      assert.deepEqual(ids(await readFeedAll(c)), ["own-never", "own-long"]);
      // A document written now lives under the new default.
      await c.items.create({ id: "new", pk: "p" });
      await assertLive(c, "new", "p");
    }),
  );

  subtests.push(
    t.test("turning TTL on: stored ttl values start to count; non-conforming ones count as absent", async () => {
      const c = await ttlContainer(undefined);
      // While TTL is off, ttl is ordinary data: no validation, no expiry.
      const own1 = (await c.items.create({ id: "own1", pk: "p", ttl: 1 })).resource;
      const zero = await c.items.create({ id: "zero", pk: "p", ttl: 0 });
      assert.equal(zero.statusCode, 201, "ttl 0 is accepted while TTL is off");
      assert.equal(zero.resource.ttl, 0);
      const str = await c.items.create({ id: "str", pk: "p", ttl: "5" });
      assert.equal(str.statusCode, 201, 'ttl "5" is accepted while TTL is off');
      await c.items.create({ id: "none", pk: "p" });
      await sleepUntil(expiryMs(own1._ts, 1, 50));
      await assertLive(c, "own1", "p", "ttl is ignored while TTL is off");

      await setDefaultTtl(c, -1);
      await assertGone(c, "own1", "p", "its own ttl 1 counts from its _ts once TTL is on");
      await assertLive(c, "zero", "p", "ttl 0 stored while off counts as absent: default -1");
      await assertLive(c, "str", "p", 'ttl "5" stored while off counts as absent: default -1');
      await assertLive(c, "none", "p");

      const { _ts } = (await c.item("none", "p").read()).resource;
      await sleepUntil(expiryMs(_ts, 1, 50));
      await setDefaultTtl(c, 1);
      await assertGone(c, "zero", "p", "ttl 0 stored while off counts as absent: default 1");
      await assertGone(c, "str", "p");
      await assertGone(c, "none", "p");
    }),
  );

  subtests.push(
    t.test("expiry is final: lengthening or removing defaultTtl does not bring a document back", async () => {
      const c = await ttlContainer(2);
      const a = (await c.items.create({ id: "a", pk: "p" })).resource;
      await c.items.create({ id: "never", pk: "p", ttl: -1 });
      const c2 = await ttlContainer(-1);
      const b = (await c2.items.create({ id: "b", pk: "p", ttl: 2 })).resource;

      await sleepUntil(expiryMs(Math.max(a._ts, b._ts), 2));
      await assertGone(c, "a", "p");
      await assertGone(c2, "b", "p");

      await setDefaultTtl(c, 3600);
      await assertGone(c, "a", "p", "lengthening defaultTtl after expiry");
      await setDefaultTtl(c, -1);
      await assertGone(c, "a", "p", "defaultTtl -1 after expiry");
      await setDefaultTtl(c, undefined);
      await assertGone(c, "a", "p", "TTL off after expiry");
      await rejectsWithCode(() => c.item("a", "p").replace({ id: "a", pk: "p" }), 404);
      assert.deepEqual(ids(await readFeedAll(c)), ["never"]);

      await setDefaultTtl(c2, undefined);
      await assertGone(c2, "b", "p", "a document expired by its own ttl stays gone when TTL is turned off");
      assert.deepEqual(ids(await readFeedAll(c2)), []);

      // The id is free: a create makes a new document.
      const again = await c.items.create({ id: "a", pk: "p" });
      assert.equal(again.statusCode, 201);
      assert.notEqual(again.resource._etag, a._etag);
      await assertLive(c, "never", "p");
    }),
  );

  subtests.push(
    t.test("changing defaultTtl before expiry: lengthening or removing it keeps documents", async () => {
      const c = await ttlContainer(2);
      const a = (await c.items.create({ id: "a", pk: "p" })).resource;
      const c2 = await ttlContainer(2);
      const b = (await c2.items.create({ id: "b", pk: "p" })).resource;
      await setDefaultTtl(c, 3600);
      await setDefaultTtl(c2, undefined);
      // Meaningful only if both changes were answered before the documents'
      // expiry instant: on a loaded machine they may come later, and then the
      // documents rightly stay expired (expiry is final).
      const changedInTime = Date.now() < Math.min(a._ts, b._ts) * 1000 + 2000;
      await sleepUntil(expiryMs(Math.max(a._ts, b._ts), 2, 300));
      if (changedInTime) {
        await assertLive(c, "a", "p", "defaultTtl lengthened before expiry");
        await assertLive(c2, "b", "p", "TTL turned off before expiry");
      }
    }),
  );

  subtests.push(
    t.test("every write restarts the countdown (replace, upsert, patch)", async () => {
      // The four are created in one batch, so they share one _ts; the
      // rewrites come a second later (so that they move _ts forward) and
      // two seconds before the originals expire.
      const c = await ttlContainer(3);
      const ids = ["rep", "ups", "pat", "untouched"];
      const batch = await c.items.batch(ids.map((id) => ({ operationType: "Create", resourceBody: { id, pk: "p", v: 1 } })), "p");
      const made = batch.result.map((r) => r.resourceBody);
      assert.deepEqual(made.map((d) => d.id), ids);
      const maxTs = made[0]._ts;
      assert.ok(made.every((d) => d._ts === maxTs), "one batch, one _ts");
      // A second after the create, all still alive: write three of them.
      await sleepUntil(expiryMs(maxTs, 1));
      const rewritten = [
        (await c.item("rep", "p").replace({ id: "rep", pk: "p", v: 2 })).resource,
        (await c.items.upsert({ id: "ups", pk: "p", v: 2 })).resource,
        (await c.item("pat", "p").patch([{ op: "set", path: "/v", value: 2 }])).resource,
      ];
      for (const [i, d] of rewritten.entries()) {
        assert.ok(d._ts > made[i]._ts, `${d.id}: the write moved _ts forward`);
      }
      // After the original expiry the rewritten ones live on, the untouched one is gone.
      await sleepUntil(expiryMs(maxTs, 3));
      await assertGone(c, "untouched", "p");
      // Live until their own expiry (_ts + 3): judged only for reads answered before it,
      // since the rewrites may straddle a second and push this check past it.
      for (const d of rewritten) {
        await assertLiveUntil(c, d.id, "p", (d._ts + 3) * 1000, `${d.id} after the original expiry`);
      }
      // And they expire three seconds after their new _ts.
      await sleepUntil(expiryMs(Math.max(...rewritten.map((d) => d._ts)), 3));
      for (const d of rewritten) await assertGone(c, d.id, "p");
    }),
  );

  subtests.push(
    t.test("patching ttl changes a document's own expiry", async () => {
      const c = await ttlContainer(3600);
      await c.items.create({ id: "a", pk: "p" });
      const patched = (await c.item("a", "p").patch([{ op: "add", path: "/ttl", value: 2 }])).resource;
      assert.equal(patched.ttl, 2);
      await sleepUntil(expiryMs(patched._ts, 1));
      await assertLiveUntil(c, "a", "p", (patched._ts + 2) * 1000, "a second before the patched ttl ends");
      await sleepUntil(expiryMs(patched._ts, 2));
      await assertGone(c, "a", "p", "expires 2 s after the patch that set ttl 2");
    }),
  );

  subtests.push(
    t.test("transactional batch and conditional patch treat expired documents as absent", async () => {
      const c = await ttlContainer(2);
      const made = [];
      for (const id of ["r", "rep", "del", "pat", "ups", "cre"]) made.push((await c.items.create({ id, pk: "p", orig: true, x: 1 })).resource);
      await c.items.create({ id: "never", pk: "p", ttl: -1, x: 1 });
      await sleepUntil(expiryMs(Math.max(...made.map((d) => d._ts)), 2));

      for (const op of [
        { operationType: "Read", id: "r" },
        { operationType: "Replace", id: "rep", resourceBody: { id: "rep", pk: "p" } },
        { operationType: "Delete", id: "del" },
        { operationType: "Patch", id: "pat", resourceBody: { operations: [{ op: "set", path: "/y", value: 1 }] } },
      ]) {
        const res = await c.items.batch([op, { operationType: "Upsert", resourceBody: { id: "probe", pk: "p" } }], "p");
        assert.deepEqual(
          res.result.map((r) => r.statusCode),
          [404, 424],
          `batch ${op.operationType} of an expired document`,
        );
      }
      await assertGone(c, "probe", "p", "failed batches applied nothing");
      await rejectsWithCode(
        () => c.item("pat", "p").patch({ condition: "FROM c WHERE c.x = 1", operations: [{ op: "set", path: "/y", value: 1 }] }),
        404,
      );

      const ok = await c.items.batch(
        [
          { operationType: "Upsert", resourceBody: { id: "ups", pk: "p", ttl: -1 } },
          { operationType: "Create", resourceBody: { id: "cre", pk: "p", ttl: -1 } },
          { operationType: "Read", id: "never" },
        ],
        "p",
      );
      assert.deepEqual(
        ok.result.map((r) => r.statusCode),
        [201, 201, 200],
        "upsert and create over expired documents create fresh ones",
      );
      assert.equal(ok.result[0].resourceBody.orig, undefined);
      assert.equal(ok.result[1].resourceBody.orig, undefined);
      assert.deepEqual(ids(await readFeedAll(c)), ["never", "ups", "cre"], "fresh documents are new insertions");
    }),
  );

  await Promise.all(subtests);
});

test("ttl validation while TTL is on: 400 with the exact message, nothing changed", async () => {
  const c = await ttlContainer(-1);
  await rejectsWithCode(() => c.items.create({ id: "z", pk: "p", ttl: 0 }), 400, TTL_MESSAGE(0));
  assert.equal((await c.item("z", "p").read()).statusCode, 404, "a rejected create stores nothing");

  for (const bad of [null, -2, 1.5, "5", 2147483648, true, { n: 1 }]) {
    await rejectsWithCode(
      () => c.items.create({ id: "bad", pk: "p", ttl: bad }),
      400,
      /^The input ttl '.*' is invalid\. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire\.$/,
    );
  }
  assert.equal((await c.item("bad", "p").read()).statusCode, 404);

  // Every write path validates, and a rejected write leaves the document as it was.
  const doc = (await c.items.create({ id: "d", pk: "p", ttl: 2147483647 })).resource;
  assert.equal(doc.ttl, 2147483647, "the largest ttl is accepted");
  await rejectsWithCode(() => c.item("d", "p").replace({ id: "d", pk: "p", ttl: 0 }), 400, TTL_MESSAGE(0));
  await rejectsWithCode(() => c.items.upsert({ id: "d", pk: "p", ttl: 0 }), 400, TTL_MESSAGE(0));
  await rejectsWithCode(() => c.item("d", "p").patch([{ op: "set", path: "/ttl", value: 0 }]), 400, TTL_MESSAGE(0));
  await rejectsWithCode(() => c.items.upsert({ id: "new", pk: "p", ttl: -5 }), 400, TTL_MESSAGE(-5));
  const still = await assertLive(c, "d", "p");
  assert.equal(still._etag, doc._etag, "rejected writes change nothing");
  assert.equal((await c.item("new", "p").read()).statusCode, 404);

  // In a batch the invalid operation fails it and nothing is applied.
  const res = await c.items.batch(
    [
      { operationType: "Create", resourceBody: { id: "b1", pk: "p" } },
      { operationType: "Create", resourceBody: { id: "b2", pk: "p", ttl: 0 } },
    ],
    "p",
  );
  assert.deepEqual(
    res.result.map((r) => r.statusCode),
    [424, 400],
  );
  assert.equal((await c.item("b1", "p").read()).statusCode, 404);
});

test("defaultTtl validation: 0 and other invalid values are 400 with the exact message", async () => {
  await rejectsWithCode(
    () => db.containers.create({ id: uid("c"), partitionKey: { paths: ["/pk"] }, defaultTtl: 0 }),
    400,
    DEFAULT_TTL_MESSAGE(0),
  );
  for (const bad of [-2, 1.5, 2147483648, "5"]) {
    const id = uid("c");
    await rejectsWithCode(
      () => db.containers.create({ id, partitionKey: { paths: ["/pk"] }, defaultTtl: bad }),
      400,
      /^The input defaultTtl '.*' is invalid\. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire\.$/,
    );
    await rejectsWithCode(() => db.container(id).read(), 404);
  }
  // On replace too; the container keeps its setting.
  const c = await ttlContainer(60);
  const { resource } = await c.read();
  await rejectsWithCode(() => c.replace({ ...resource, defaultTtl: 0 }), 400, DEFAULT_TTL_MESSAGE(0));
  assert.equal((await c.read()).resource.defaultTtl, 60);
  // The largest value is accepted.
  await ttlContainer(2147483647);
});

test("defaultTtl: null is 400 with the defaultTtl message, on create and replace; removing the property turns TTL off", async () => {
  // The SDK sends the body with JSON.stringify, so an explicit null reaches the
  // server (the message quotes it), where Cosmos DB refuses it.
  const id = uid("c");
  await rejectsWithCode(
    () => db.containers.create({ id, partitionKey: { paths: ["/pk"] }, defaultTtl: null }),
    400,
    DEFAULT_TTL_MESSAGE("null"),
  );
  await rejectsWithCode(() => db.container(id).read(), 404);

  const c = await ttlContainer(60);
  const { resource } = await c.read();
  await rejectsWithCode(() => c.replace({ ...resource, defaultTtl: null }), 400, DEFAULT_TTL_MESSAGE("null"));
  const kept = (await c.read()).resource;
  assert.equal(kept.defaultTtl, 60, "a refused replace keeps the policy");
  assert.equal(kept._etag, resource._etag, "a refused replace changes nothing");
  // Leaving the property out is how TTL is turned off.
  const off = await setDefaultTtl(c, undefined);
  assert.equal(off.defaultTtl, undefined);
});

test("defaultTtl with indexing mode none is 400", async () => {
  await rejectsWithCode(
    () =>
      db.containers.create({
        id: uid("c"),
        partitionKey: { paths: ["/pk"] },
        defaultTtl: 10,
        indexingPolicy: { indexingMode: "none", automatic: false },
      }),
    400,
    "Indexing mode value cannot be 'none' when 'defaultTtl' is specified in the collection",
  );
  const c = await ttlContainer(10);
  const { resource } = await c.read();
  await rejectsWithCode(() => c.replace({ ...resource, indexingPolicy: { indexingMode: "none", automatic: false } }), 400);
  assert.equal((await c.read()).resource.indexingPolicy.indexingMode, "consistent");
});
