// Prometheus metrics (GET /metrics) as seen after the official JavaScript SDK
// has worked against the server: every request the SDK sent (through a
// recording proxy, so its own account, partition-key-range and query-plan
// requests are seen too) is counted once under the right operation, and the
// charges add up to the x-ms-request-charge headers it received. Its ORDER BY
// query across partitions is refused (400, substatus 1004) and run by the SDK
// from the query plan, one partition key range at a time: each of those
// requests is counted too.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startProxy } from "../lib/proxy.js";
import { client, startServer, uid } from "../lib/server.js";

let srv;
before(async () => {
  srv = await startServer();
});
after(() => srv?.stop());

/** Parses the Prometheus text format into [{name, labels, value}] (no histograms' buckets needed). */
function parseMetrics(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `metrics line ${JSON.stringify(line)}`);
    const labels = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

async function scrape() {
  const res = await fetch(`${srv.endpoint}metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^text\/plain/);
  return parseMetrics(await res.text());
}

/** The value of name with exactly these operation (and status) labels; 0 if absent. */
function value(metrics, name, operation, status) {
  const m = metrics.find((x) => x.name === name && x.labels.operation === operation && x.labels.status === status);
  return m ? m.value : 0;
}

/** Sums name over every operation but Metrics (the scrapes themselves). */
function served(metrics, name) {
  return metrics.filter((x) => x.name === name && x.labels.operation !== "Metrics").reduce((s, x) => s + x.value, 0);
}

test("metrics: every SDK request is counted under its operation, with its charge", async () => {
  const proxy = await startProxy(srv.endpoint);
  try {
    const c = client(proxy.endpoint);
    const { database } = await c.databases.create({ id: uid("metrics") });
    const { container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } });
    await container.items.create({ id: "a", pk: "p", n: 1 });
    await container.items.upsert({ id: "b", pk: "p", n: 2 });
    await container.item("a", "p").read();
    const missing = await container.item("missing", "p").read();
    assert.equal(missing.statusCode, 404);
    const batch = await container.items.batch([{ operationType: "Create", resourceBody: { id: "c1", pk: "p" } }], "p");
    assert.equal(batch.code, 200);
    const { resources } = await container.items.query("SELECT * FROM c ORDER BY c.n").fetchAll();
    assert.equal(resources.length, 3);
    // The SDK sends a query plan request beside the query and returns without
    // waiting for it: wait until the proxy has logged it, and everything else.
    await proxy.waitFor((e) => e.reqHeaders["x-ms-cosmos-is-query-plan-request"] !== undefined, "query plan request");
    await proxy.idle();

    // Requests are recorded as their handlers return, possibly just after the
    // proxy has the response: scrape until all are in.
    let m;
    for (const deadline = Date.now() + 10_000; ; await new Promise((r) => setTimeout(r, 10))) {
      m = await scrape();
      if (served(m, "lethe_requests_total") >= proxy.log.length || Date.now() > deadline) break;
    }

    for (const [op, status, n] of [
      ["CreateDatabase", "201", 1],
      ["CreateContainer", "201", 1],
      ["CreateDocument", "201", 1],
      ["UpsertDocument", "201", 1],
      ["ReadDocument", "200", 1],
      ["ReadDocument", "404", 1],
      ["Batch", "200", 1],
    ]) {
      assert.equal(value(m, "lethe_requests_total", op, status), n, `${op} ${status}`);
      assert.ok(value(m, "lethe_request_charge_total", op, status) > 0, `${op} ${status} charge`);
    }
    // The query needs a plan: the SDK sends it (refused with 400/1004 and the
    // plan) and, in parallel, the plan request; then the rewritten query to
    // each partition key range. Each is counted as what it is.
    const posts = proxy.log.filter(
      (e) => e.path.endsWith("/docs") && e.method === "POST" && e.reqHeaders["content-type"]?.startsWith("application/query+json"),
    );
    const plans = posts.filter((e) => e.reqHeaders["x-ms-cosmos-is-query-plan-request"]);
    const ranged = posts.filter((e) => e.reqHeaders["x-ms-documentdb-partitionkeyrangeid"] !== undefined);
    const refused = posts.filter((e) => !plans.includes(e) && !ranged.includes(e));
    assert.equal(plans.length, 1, "one query plan request");
    assert.equal(refused.length, 1, "one direct query");
    assert.equal(refused[0].status, 400);
    assert.equal(refused[0].resHeaders["x-ms-substatus"], "1004");
    assert.ok(ranged.length >= 1, "the SDK queried the partition key ranges");
    for (const e of ranged) assert.equal(e.status, 200);
    assert.equal(value(m, "lethe_requests_total", "QueryPlan", "200"), 1);
    assert.equal(value(m, "lethe_requests_total", "QueryDocuments", "400"), 1);
    assert.equal(value(m, "lethe_requests_total", "QueryDocuments", "200"), ranged.length);

    const sent = proxy.log.reduce((s, e) => s + Number(e.resHeaders["x-ms-request-charge"] ?? 0), 0);
    assert.equal(served(m, "lethe_requests_total"), proxy.log.length, "every response counted once");
    assert.ok(Math.abs(served(m, "lethe_request_charge_total") - sent) < 1e-6, "charges add up to the headers sent");
  } finally {
    await proxy.close();
  }
});
