// https (--tls) through the official JavaScript SDK.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import https from "node:https";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, test } from "node:test";
import { rejectsWithCode } from "../lib/helpers.js";
import { EMULATOR_KEY, client, makeTempDir, removeDir, startServer, uid } from "../lib/server.js";

const pkgDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** GET url with the default (verifying) TLS settings; resolves to the error or the status. */
function plainGet(url, options = {}) {
  return new Promise((resolve) => {
    const req = https.get(url, { agent: false, ...options }, (res) => {
      res.resume();
      resolve({ status: res.statusCode, cert: res.socket.getPeerCertificate?.() });
    });
    req.on("error", (err) => resolve({ err }));
  });
}

test("CRUD round trip over https with a self-signed certificate", async () => {
  const srv = await startServer({ tls: true });
  after(() => srv.stop());
  assert.match(srv.endpoint, /^https:\/\/127\.0\.0\.1:\d+\/$/);

  // It is really TLS with an untrusted certificate: a verifying client refuses it.
  const { err } = await plainGet(srv.endpoint);
  assert.ok(err, "a verifying https client must refuse the self-signed certificate");
  assert.match(err.code, /CERT|SIGNATURE/, `certificate error, got ${err.code}`);

  const cosmos = client(srv.endpoint);
  after(() => cosmos.dispose());
  const account = await cosmos.getDatabaseAccount();
  assert.equal(account.resource.writableLocations[0].databaseAccountEndpoint, srv.endpoint, "the account advertises the https endpoint");

  const { database } = await cosmos.databases.createIfNotExists({ id: uid("tlsdb") });
  const { container } = await database.containers.createIfNotExists({ id: "c", partitionKey: { paths: ["/pk"] } });
  const created = await container.items.create({ id: "a", pk: "p", v: 1 });
  assert.equal(created.statusCode, 201);
  assert.equal((await container.item("a", "p").read()).resource.v, 1);
  assert.equal((await container.item("a", "p").replace({ id: "a", pk: "p", v: 2 })).resource.v, 2);
  assert.equal((await container.items.upsert({ id: "a", pk: "p", v: 3 })).statusCode, 200);
  assert.equal((await container.item("a", "p").patch([{ op: "incr", path: "/v", value: 1 }])).resource.v, 4);
  const batch = await container.items.batch([{ operationType: "Create", resourceBody: { id: "b", pk: "p" } }], "p");
  assert.equal(batch.result[0].statusCode, 201);
  assert.equal((await container.item("a", "p").delete()).statusCode, 204);
  assert.equal((await container.item("a", "p").read()).statusCode, 404);
  await rejectsWithCode(() => container.items.create({ id: "b", pk: "p" }), 409);
  await database.delete();
});

test("--tls with a data dir: the certificate is kept, covers 127.0.0.1 and localhost, and NODE_EXTRA_CA_CERTS trusts it", async () => {
  const dataDir = await makeTempDir();
  after(() => removeDir(dataDir));
  let srv = await startServer({ dataDir, tls: true });
  after(() => srv.stop());

  const certFile = path.join(dataDir, "tls", "cert.pem");
  const cert = new X509Certificate(await readFile(certFile));
  assert.match(cert.subjectAltName ?? "", /IP Address:127\.0\.0\.1/);
  assert.match(cert.subjectAltName ?? "", /DNS:localhost/);
  const served = await plainGet(srv.endpoint, { rejectUnauthorized: false });
  assert.equal(served.cert?.fingerprint256, cert.fingerprint256, "the server serves the certificate in <data dir>/tls/cert.pem");

  // A separate node process that trusts the certificate through
  // NODE_EXTRA_CA_CERTS uses the SDK with full verification (no custom agent),
  // by IP and by name.
  const port = new URL(srv.endpoint).port;
  const script = `
    import { CosmosClient } from "@azure/cosmos";
    for (const [name, endpoint] of [["by-ip", "https://127.0.0.1:${port}/"], ["by-name", "https://localhost:${port}/"]]) {
      const c = new CosmosClient({ endpoint, key: ${JSON.stringify(EMULATOR_KEY)} });
      const { database } = await c.databases.createIfNotExists({ id: "verified" });
      const { container } = await database.containers.createIfNotExists({ id: "c", partitionKey: { paths: ["/pk"] } });
      await container.items.upsert({ id: name, pk: "p" });
      const r = await container.item(name, "p").read();
      if (r.statusCode !== 200) throw new Error("read " + r.statusCode);
      c.dispose();
    }
    console.log("verified ok");
  `;
  const env = { ...process.env, NODE_EXTRA_CA_CERTS: certFile };
  delete env.NODE_TLS_REJECT_UNAUTHORIZED;
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ["--input-type=module", "-e", script], { cwd: pkgDir, env, timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`child failed: ${err.message}\n${stderr}`)) : resolve(stdout),
    );
  });
  assert.match(out, /verified ok/);

  // The same certificate after a restart.
  assert.deepEqual(await srv.stop(), { code: 0, signal: null });
  srv = await startServer({ dataDir, tls: true });
  after(() => srv.stop());
  const again = await plainGet(srv.endpoint, { rejectUnauthorized: false });
  assert.equal(again.cert?.fingerprint256, cert.fingerprint256, "the certificate is reused, not regenerated");
  const cosmos = client(srv.endpoint);
  after(() => cosmos.dispose());
  const r = await cosmos.database("verified").container("c").item("by-name", "p").read();
  assert.equal(r.statusCode, 200);
});
