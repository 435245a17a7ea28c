// Provisioned throughput through the official JavaScript SDK: offers at
// creation, container.readOffer, client.offers, offer.replace, and a burst
// into a 400 RU/s container that is throttled (429) and still completes,
// thanks to the SDK's own retries.

import assert from "node:assert/strict";
import { test } from "node:test";
import { fileFixture, rejectsWithCode } from "../lib/helpers.js";
import { startProxy } from "../lib/proxy.js";
import { client, EMULATOR_KEY, startServer, uid } from "../lib/server.js";

const { cosmos, newDatabase } = await fileFixture();

test("offers: manual and autoscale round trips", async () => {
  const db = await newDatabase("offers");
  const { container: manual } = await db.containers.create({ id: uid("m"), partitionKey: { paths: ["/pk"] }, throughput: 400 });
  const { container: auto } = await db.containers.create({ id: uid("a"), partitionKey: { paths: ["/pk"] }, maxThroughput: 4000 });
  const { container: none } = await db.containers.create({ id: uid("n"), partitionKey: { paths: ["/pk"] } });

  const { resource: offer, offer: handle } = await manual.readOffer();
  assert.equal(offer.content.offerThroughput, 400);
  assert.equal(offer.offerVersion, "V2");
  assert.equal(offer._self, `offers/${offer.id}/`);
  const { resource: def } = await manual.read();
  assert.equal(offer.resource, def._self);
  assert.equal(offer.offerResourceId, def._rid);

  // Replace the whole offer body with a new value, as the SDK's docs show.
  offer.content.offerThroughput = 1000;
  const replaced = await handle.replace(offer);
  assert.equal(replaced.resource.content.offerThroughput, 1000);
  const read = await cosmos.offer(offer.id).read();
  assert.equal(read.resource.content.offerThroughput, 1000);
  assert.notEqual(read.resource._etag, offer._etag);

  offer.content.offerThroughput = 450;
  await rejectsWithCode(() => handle.replace(offer), 400);
  await rejectsWithCode(() => cosmos.offer("nosuchoffer").read(), 404);

  const { resource: autoOffer, offer: autoHandle } = await auto.readOffer();
  assert.equal(autoOffer.content.offerAutopilotSettings.maxThroughput, 4000);
  assert.equal(autoOffer.content.offerThroughput, 400, "an idle autoscale offer reports 10% of its maximum");
  autoOffer.content.offerAutopilotSettings.maxThroughput = 5000;
  const autoReplaced = await autoHandle.replace(autoOffer);
  assert.equal(autoReplaced.resource.content.offerAutopilotSettings.maxThroughput, 5000);

  // A container created without throughput (in a database without shared
  // throughput) has Cosmos DB's default offer: 400 RU/s manual.
  const { resource: noneDef } = await none.read();
  const { resource: defaultOffer } = await none.readOffer();
  assert.equal(defaultOffer.offerResourceId, noneDef._rid);
  assert.equal(defaultOffer.resource, noneDef._self);
  assert.equal(defaultOffer.content.offerThroughput, 400);
  assert.equal(defaultOffer.content.offerAutopilotSettings, undefined);
  const { resource: defaultById } = await cosmos.offer(defaultOffer.id).read();
  assert.deepEqual(defaultById, defaultOffer);

  // client.offers lists and queries every offer.
  const { resources: all } = await cosmos.offers.readAll().fetchAll();
  assert.ok(all.some((o) => o.id === offer.id) && all.some((o) => o.id === autoOffer.id));
  assert.ok(all.some((o) => o.id === defaultOffer.id && o.offerResourceId === noneDef._rid));
  const { resources: found } = await cosmos.offers
    .query({ query: "SELECT * FROM o WHERE o.offerResourceId = @rid", parameters: [{ name: "@rid", value: def._rid }] })
    .fetchAll();
  assert.deepEqual(found.map((o) => o.id), [offer.id]);
});

test("offers: shared database throughput and validation", async () => {
  const id = uid("shared");
  const { database } = await cosmos.databases.create({ id, throughput: 800 });
  const { resource: dbDef } = await database.read();
  const { resources } = await cosmos.offers
    .query(`SELECT * FROM o WHERE o.resource = "${dbDef._self}"`)
    .fetchAll();
  assert.equal(resources.length, 1);
  assert.equal(resources[0].content.offerThroughput, 800);
  // Its containers share it: no offer of their own, not even a default one.
  const { container: inner } = await database.containers.create({ id: uid("inner"), partitionKey: { paths: ["/pk"] } });
  const innerOffer = await inner.readOffer();
  assert.equal(innerOffer.resource, undefined);
  await rejectsWithCode(() => cosmos.databases.create({ id: uid("bad"), throughput: 350 }), 400);
  await rejectsWithCode(() => cosmos.databases.create({ id: uid("bad"), maxThroughput: 1500 }), 400);
  await rejectsWithCode(
    () => database.containers.create({ id: uid("bad"), partitionKey: { paths: ["/pk"] }, throughput: 401 }),
    400,
  );
  await database.delete();
  const { resources: after } = await cosmos.offers.query(`SELECT * FROM o WHERE o.resource = "${dbDef._self}"`).fetchAll();
  assert.equal(after.length, 0, "deleting the database removes its offer");
});

test("throttling: a burst is throttled and completes through SDK retries", async () => {
  // A server on a manual clock: its 400 RU/s bucket refills only when the
  // clock moves, so once spent it stays spent, and the SDK's first create is
  // throttled however fast or slow this machine is. On each 429 the proxy
  // moves the clock one second before the SDK sees the answer, so the SDK's
  // retry finds the bucket refilled: the throttling ends on the test's cue.
  const manual = await startServer({ args: ["--clock", "manual"] });
  const direct = client(manual.endpoint);
  const advance = () =>
    fetch(new URL("_lethe/clock", manual.endpoint), {
      method: "POST",
      headers: { "x-lethe-master-key": EMULATOR_KEY },
      body: JSON.stringify({ advanceSeconds: 1 }),
    }).then((r) => assert.equal(r.status, 200, "advance the clock"));
  const proxy = await startProxy(manual.endpoint, { onExchange: (e) => (e.status === 429 ? advance() : undefined) });
  const viaProxy = client(proxy.endpoint, {
    connectionPolicy: { retryOptions: { maxRetryAttemptCount: 100, maxWaitTimeInSeconds: 120 } },
  });
  try {
    const { database: db } = await direct.databases.create({ id: uid("throttle") });
    const id = uid("small");
    await db.containers.create({ id, partitionKey: { paths: ["/pk"] }, throughput: 400 });
    const pad = "x".repeat(40000); // about 21 RU per create: 400 RU/s is 19 creates' worth

    // Spend the bucket: raw creates (no retries) until the first 429.
    const raw = client(manual.endpoint, { connectionPolicy: { retryOptions: { maxRetryAttemptCount: 0 } } });
    let spent = 0;
    try {
      for (;;) {
        try {
          await raw.database(db.id).container(id).items.create({ id: `raw${spent}`, pk: "p", pad });
          spent++;
        } catch (err) {
          assert.equal(err.code, 429, `raw create: ${err.message}`);
          break;
        }
        assert.ok(spent < 100, "a 400 RU/s bucket cannot hold 100 creates of 21 RU");
      }
    } finally {
      raw.dispose();
    }
    assert.ok(spent > 0, "the bucket admitted creates before it ran out");

    const container = viaProxy.database(db.id).container(id);
    const n = 60;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => container.items.create({ id: `d${i}`, pk: "p", pad })),
    );
    assert.ok(results.every((r) => r.statusCode === 201));

    const throttled = proxy.log.filter((e) => e.status === 429);
    assert.ok(throttled.length > 0, "the burst must be throttled");
    for (const e of throttled) {
      assert.ok(Number(e.resHeaders["x-ms-retry-after-ms"]) >= 1, "x-ms-retry-after-ms");
      assert.equal(e.resHeaders["x-ms-substatus"], "3200");
      assert.equal(JSON.parse(e.resBody).code, "TooManyRequests");
    }

    const { resources: count } = await container.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
    assert.deepEqual(count, [n + spent], "every create completed exactly once");
  } finally {
    viaProxy.dispose();
    direct.dispose();
    await proxy.close();
    await manual.stop();
  }
});
