// Master-key authorization failures through the official JavaScript SDK.

import assert from "node:assert/strict";
import { test } from "node:test";
import { fileFixture, rejectsWithCode } from "../lib/helpers.js";
import { client, uid } from "../lib/server.js";

const { srv, cosmos } = await fileFixture();

// A well-formed key that is not the server's: the emulator key with its first
// bytes changed.
const WRONG_KEY = Buffer.from(
  Buffer.from("C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==", "base64").map(
    (b, i) => (i < 4 ? b ^ 0xff : b),
  ),
).toString("base64");

/** Runs fn with a deadline, so that a hanging SDK fails the test instead of stalling it. */
async function within(ms, what, fn) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([fn(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

test("a client with a wrong key gets 401 with a JSON error body", async () => {
  const { database } = await cosmos.databases.createIfNotExists({ id: uid("authdb") });
  const { container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } });
  await container.items.create({ id: "a", pk: "p" });

  // With endpoint discovery on (the default) the SDK's first request is the
  // account read GET /, and that is what answers 401. With discovery off the
  // SDK sends each operation itself, so every route's signature check answers.
  for (const connectionPolicy of [undefined, { enableEndpointDiscovery: false }]) {
    const bad = client(srv.endpoint, { key: WRONG_KEY, ...(connectionPolicy ? { connectionPolicy } : {}) });
    const label = connectionPolicy ? "discovery off" : "discovery on";
    try {
      const c = bad.database(database.id).container("c");
      const ops = {
        "databases.create": () => bad.databases.create({ id: uid("x") }),
        "database.read": () => bad.database(database.id).read(),
        "container.read": () => c.read(),
        "items.create": () => c.items.create({ id: "b", pk: "p" }),
        "item.read": () => c.item("a", "p").read(),
        "item.replace": () => c.item("a", "p").replace({ id: "a", pk: "p", v: 2 }),
        "item.patch": () => c.item("a", "p").patch([{ op: "set", path: "/v", value: 2 }]),
        "item.delete": () => c.item("a", "p").delete(),
      };
      for (const [name, op] of Object.entries(ops)) {
        const what = `${name} (${label})`;
        const err = await within(15_000, what, () => rejectsWithCode(op, 401));
        assert.equal(err.body?.code, "Unauthorized", `${what}: the error body is Cosmos JSON`);
        assert.equal(typeof err.body?.message, "string", what);
        assert.ok(err.body.message.length > 0, what);
      }
      // items.batch rethrows every failure as new Error(`Batch request error: ${err.message}`)
      // (dist/esm/client/Item/Items.js), dropping the code; the server's message
      // must still come through, so the 401's JSON body was parsed.
      await within(15_000, `items.batch (${label})`, () =>
        assert.rejects(
          () => c.items.batch([{ operationType: "Create", resourceBody: { id: "b", pk: "p" } }], "p"),
          (err) => {
            assert.ok(!(err instanceof TypeError) && !(err instanceof SyntaxError), err.message);
            assert.match(err.message, /^Batch request error: .*authorization token/);
            return true;
          },
        ),
      );
    } finally {
      bad.dispose();
    }
  }
  // Nothing the bad client tried happened.
  const a = await container.item("a", "p").read();
  assert.equal(a.statusCode, 200);
  assert.equal(a.resource.v, undefined);
  assert.equal((await container.item("b", "p").read()).statusCode, 404);
});
