// The Memory tab's route handler (lib/memory-tab.js), against an upstream
// that records what it is asked, and the registration with a fake api. The
// real gateway, browser and engine: e2e/openclaw/memory-tab.test.mjs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";

import plugin from "../index.js";
import { createMemoryHandler, registerMemoryTab, MEMORY_ROUTE, MEMORY_TAB, keyMatches, hasOperatorRoles } from "../lib/memory-tab.js";

const TOKEN = "upstream-token-0123456789";
const PAGE = '<!doctype html><meta name="lossless-page-key" content=""><title>x</title>';
let upstream;
let upstreamURL;
const seen = [];

before(async () => {
  upstream = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    if (req.headers["x-lossless-token"] !== TOKEN) {
      res.statusCode = 403;
      return res.end("no token");
    }
    res.setHeader("Set-Cookie", "lossless_ui=leak");
    res.setHeader("Content-Security-Policy", "frame-ancestors 'self'");
    if (req.url === "/" || req.url.startsWith("/?")) {
      res.setHeader("Content-Type", "text/html; charset=utf-8");
      return res.end(PAGE);
    }
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ path: req.url }));
  });
  await new Promise((r) => upstream.listen(0, "127.0.0.1", r));
  upstreamURL = `http://127.0.0.1:${upstream.address().port}/`;
});

after(() => upstream.close());

/** Serves the handler alone (as the gateway would after its auth) and returns its base URL. */
async function serve(handler) {
  const srv = http.createServer(async (req, res) => {
    if (!(await handler(req, res))) {
      res.statusCode = 404;
      res.end("not ours");
    }
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { base: `http://127.0.0.1:${srv.address().port}`, close: () => new Promise((r) => srv.close(r)) };
}

test("the page gets its key; API requests need it; the token goes upstream in a header only", async () => {
  const handler = createMemoryHandler({ explorer: async () => ({ url: upstreamURL, token: TOKEN }), pageKey: "k3y-abc" });
  const { base, close } = await serve(handler);
  try {
    seen.length = 0;
    const page = await fetch(`${base}${MEMORY_ROUTE}/`);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.ok(html.includes('<meta name="lossless-page-key" content="k3y-abc">'), html);
    assert.ok(!html.includes(TOKEN), "the token reached the browser");
    assert.equal(page.headers.get("set-cookie"), null, "an upstream cookie passed through");
    assert.equal(page.headers.get("content-security-policy"), "frame-ancestors 'self'");
    assert.equal(seen[0].headers["x-lossless-embed"], "frame");
    assert.equal(seen[0].headers["x-lossless-token"], TOKEN);

    // No key, a wrong key: refused before the upstream is asked.
    seen.length = 0;
    for (const q of ["", "?k=wrong", "?k=k3y-ab"]) {
      const r = await fetch(`${base}${MEMORY_ROUTE}/api/sessions${q}`, { headers: { Origin: "null" } });
      assert.equal(r.status, 403, q);
      assert.match(await r.text(), /own page only/);
      assert.equal(r.headers.get("access-control-allow-origin"), "null", "the frame cannot read why");
    }
    assert.equal(seen.length, 0, "a request without the key reached the engine");

    // With the key: proxied, the key and a browser token stripped, cookies not forwarded.
    const r = await fetch(`${base}${MEMORY_ROUTE}/api/sessions?k=k3y-abc&offset=2&token=evil`, { headers: { Cookie: "__openclaw_grant=secret", Authorization: "Bearer gw" } });
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { path: "/api/sessions?offset=2" });
    assert.equal(seen[0].headers.cookie, undefined, "the gateway's cookie was forwarded");
    assert.equal(seen[0].headers.authorization, undefined, "the gateway's bearer token was forwarded");

    // Read-only; the bare route redirects to its page.
    const post = await fetch(`${base}${MEMORY_ROUTE}/api/sessions?k=k3y-abc`, { method: "POST", body: "x" });
    assert.equal(post.status, 405);
    const bare = await fetch(`${base}${MEMORY_ROUTE}`, { redirect: "manual" });
    assert.equal(bare.status, 308);
    assert.equal(bare.headers.get("location"), `${MEMORY_ROUTE}/`);
    // Another path is not the handler's.
    assert.equal((await fetch(`${base}/plugins/lossless/memoryx`)).status, 404);
  } finally {
    await close();
  }
});

test("a gateway with operator roles gets nothing; an engine without an explorer answers 503", async () => {
  let asked = 0;
  const roles = createMemoryHandler({
    explorer: async () => {
      asked++;
      return { url: upstreamURL, token: TOKEN };
    },
    config: () => ({ gateway: { roles: { default: "guest", definitions: { guest: { agents: ["a"] } } } } }),
  });
  const down = createMemoryHandler({
    explorer: async () => {
      throw new Error("method not found: this process serves no memory explorer");
    },
  });
  const a = await serve(roles);
  const b = await serve(down);
  try {
    const r = await fetch(`${a.base}${MEMORY_ROUTE}/`);
    assert.equal(r.status, 403);
    assert.match(await r.text(), /operator roles/);
    assert.equal(asked, 0);
    const d = await fetch(`${b.base}${MEMORY_ROUTE}/`);
    assert.equal(d.status, 503);
    assert.match(await d.text(), /serves no memory explorer/);
  } finally {
    await a.close();
    await b.close();
  }
  assert.equal(hasOperatorRoles({ gateway: {} }), false);
  assert.equal(keyMatches(undefined, "x"), false);
  assert.equal(keyMatches("x", "x"), true);
});

test("register() adds the gateway-auth route and the tab descriptor, and starts nothing", () => {
  const routes = [];
  const descriptors = [];
  let engines = 0;
  plugin.register({
    pluginConfig: { storeDir: "/nowhere/memtab", bridge: { command: "/nonexistent/lossless" } },
    logger: { info() {}, warn() {}, error() {}, debug() {} },
    registerContextEngine: () => engines++,
    registerTool() {},
    registerHttpRoute: (r) => routes.push(r),
    session: { controls: { registerControlUiDescriptor: (d) => descriptors.push(d) } },
  });
  assert.equal(engines, 1);
  assert.equal(routes.length, 1);
  assert.equal(routes[0].path, MEMORY_ROUTE);
  assert.equal(routes[0].auth, "gateway");
  assert.equal(routes[0].match, "prefix");
  assert.equal(typeof routes[0].handler, "function");
  assert.deepEqual(descriptors, [{ ...MEMORY_TAB }]);
  assert.ok(descriptors[0].path.startsWith(`${MEMORY_ROUTE}/`), "the tab's path must be under the route");
  assert.match(descriptors[0].slug, /^[a-z0-9]+(?:-[a-z0-9]+)*$/);
  // An older host without the APIs: nothing registered, no error.
  assert.equal(registerMemoryTab({ registerContextEngine() {} }, { explorer: async () => ({}) }), false);
});
