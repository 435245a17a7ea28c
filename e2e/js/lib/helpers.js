// Assertions and small utilities shared by the test files.

import assert from "node:assert/strict";
import { after } from "node:test";
import { StatusCodes } from "@azure/cosmos";
import { client, startServer, uid } from "./server.js";

/**
 * Starts an in-memory server for the calling test file, stops it in an `after`
 * hook, and returns {srv, cosmos, newDatabase}. Call at the top level of a test
 * file (ESM top-level await).
 */
export async function fileFixture(opts = {}) {
  const srv = await startServer(opts);
  after(() => srv.stop());
  const cosmos = client(srv.endpoint);
  after(() => cosmos.dispose());
  const newDatabase = async (prefix = "db") => {
    const { database } = await cosmos.databases.createIfNotExists({ id: uid(prefix) });
    return database;
  };
  return { srv, cosmos, newDatabase };
}

/**
 * Asserts that fn() rejects with a Cosmos ErrorResponse of the given HTTP
 * status (err.code), whose message matches `message` when given (a string is
 * compared exactly, a RegExp matched). A TypeError or SyntaxError (what the SDK
 * throws on a non-JSON error body) never passes. Returns the error.
 */
export async function rejectsWithCode(fn, code, message) {
  let caught;
  await assert.rejects(fn, (err) => {
    caught = err;
    return true;
  });
  assert.ok(
    !(caught instanceof TypeError) && !(caught instanceof SyntaxError),
    `expected a Cosmos error ${code}, got ${caught?.name}: ${caught?.message}`,
  );
  assert.equal(caught.code, code, `expected status ${code}, got ${caught.code}: ${caught.message}`);
  if (typeof message === "string") assert.equal(caught.message, message);
  else if (message instanceof RegExp) assert.match(caught.message, message);
  return caught;
}

/** Reads an item and returns {statusCode, resource}; 404 does not throw (SDK behaviour). */
export async function readItem(container, id, pk) {
  const r = await container.item(id, pk).read();
  return { statusCode: r.statusCode, resource: r.resource, etag: r.etag, requestCharge: r.requestCharge };
}

/** Asserts that an item point read answers 404 with no resource. */
export async function assertGone(container, id, pk, msg = `${id} should be gone`) {
  const r = await container.item(id, pk).read();
  assert.equal(r.statusCode, 404, `${msg}: read gave ${r.statusCode}`);
  assert.equal(r.resource, undefined, msg);
}

/** Asserts that an item point read answers 200 and returns the document. */
export async function assertLive(container, id, pk, msg = `${id} should be readable`) {
  const r = await container.item(id, pk).read();
  assert.equal(r.statusCode, 200, `${msg}: read gave ${r.statusCode}`);
  assert.equal(r.resource?.id, id, msg);
  return r.resource;
}

/**
 * Asserts a document is readable while its expiry instant (epoch ms) has not
 * come. A 404 is a failure only if its response arrived before that instant:
 * the server decided before it answered, so that 404 is a real early expiry.
 * On a loaded machine a read can arrive after the instant; its answer is then
 * inconclusive and is not held against the server.
 */
export async function assertLiveUntil(container, id, pk, deadlineMs, msg) {
  const r = await container.item(id, pk).read();
  if (r.statusCode === 200) {
    assert.equal(r.resource?.id, id, msg);
    return true;
  }
  assert.ok(Date.now() >= deadlineMs, `${msg}: read gave ${r.statusCode} before the document's expiry instant`);
  return false;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Sleeps until the wall clock reaches epoch milliseconds `ms`. */
export async function sleepUntil(ms) {
  const d = ms - Date.now();
  if (d > 0) await sleep(d);
}

/**
 * The epoch milliseconds just after a document with `_ts` and an effective
 * ttl of `seconds` expires (expired when _ts + ttl <= server time in whole
 * seconds; server and tests share this machine's clock). The margin covers the
 * step from a whole second to the server's reading of its clock.
 */
export function expiryMs(ts, seconds, marginMs = 150) {
  return (ts + seconds) * 1000 + marginMs;
}

/**
 * Reads every document of a container through the SDK's read feed: GET
 * .../docs, following x-ms-continuation (see feed.test.js for why this is not
 * items.readAll). Returns the pages' resources concatenated.
 */
export async function readFeedAll(container, maxItemCount) {
  const it = readFeedIterator(container, maxItemCount);
  const out = [];
  let pages = 0;
  while (it.hasMoreResults()) {
    const page = await it.fetchNext();
    out.push(...page.resources);
    if (++pages > 10_000) throw new Error("read feed does not end");
  }
  return out;
}

/**
 * A QueryIterator over the container's read feed. items.query with no query
 * text is the SDK's own read-feed path (the one databases.readAll and
 * containers.readAll use): ClientContext.queryFeed sends GET .../docs when the
 * query is undefined. For items the iterator also fires a query-plan request in
 * the background, whose result it ignores unless the feed request fails with a
 * 400 carrying additionalErrorInfo.
 */
export function readFeedIterator(container, maxItemCount) {
  return container.items.query(undefined, maxItemCount ? { maxItemCount } : {});
}

/** Ids of a list of documents. */
export const ids = (docs) => docs.map((d) => d.id);

/**
 * Reads a change feed iterator until it answers 304 (caught up), checking
 * every response's continuation and charge and each item with check; returns
 * the items read and the last continuation token.
 */
export async function drainChangeFeed(it, check = () => {}) {
  const got = [];
  for (let i = 0; ; i++) {
    assert.ok(i < 200, "the change feed does not catch up");
    const res = await it.readNext();
    assert.ok(res.continuationToken, "every response carries a continuation");
    assert.ok(res.requestCharge > 0, "every response is charged");
    if (res.statusCode === StatusCodes.NotModified) {
      assert.equal(res.result.length, 0);
      return { got, token: res.continuationToken };
    }
    for (const item of res.result) check(item);
    got.push(...res.result);
  }
}

/** How long eventually waits by default. */
export const WAIT_MS = 15_000;

/**
 * Calls fn until it resolves without throwing and returns its value; after
 * timeoutMs it fails with `what` and fn's last error (an assertion's message
 * shows what was last seen).
 */
export async function eventually(what, fn, timeoutMs = WAIT_MS) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const e = new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${last?.message ?? last}`);
      e.cause = last;
      throw e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
