// The Memory tab: the engine's memory explorer (package ui of the Go
// engine, `lossless serve --ui`) in OpenClaw's Control UI.
//
// The plugin registers a sidebar tab (a Control UI descriptor, surface
// "tab") whose page is this plugin's own gateway-auth HTTP route. The
// dashboard shows the route in a sandboxed frame and gives the frame a
// short-lived cookie grant (GET and HEAD, operator.read): the gateway has
// authenticated every request before the handler below runs. The handler
// proxies GET and HEAD to the explorer the engine process serves on
// 127.0.0.1, sending the explorer's token in a header the browser never
// sees (the token is never in a URL or in the page), and asks the
// explorer for the answers a frame needs (ui.EmbedHeader: framing by the
// gateway's own origin, CORS for the frame's opaque origin).
//
// What the handler refuses, before anything reaches the engine:
// - methods other than GET and HEAD (405): the explorer is read-only;
// - a gateway with named operator roles (gateway.roles, 403): a role may
//   restrict the agents and sessions a person sees, and the engine's store
//   cannot tell which sessions a role may see, so the tab serves nothing
//   there rather than everything;
// - an API request without the page key (403): the frame's API requests
//   carry the grant cookie (credentials "include") from an opaque origin,
//   and the explorer answers them with Access-Control-Allow-Origin: null;
//   so the handler puts a random key (per plugin process) in the page it
//   serves (ui.PageKeyMeta), which the page sends with every API request.
//   Another site's sandboxed frame could send the cookie too while a grant
//   is alive, but cannot read the page (no CORS on it) and so lacks the
//   key. (A Referer check does not work: Chromium sends none from an
//   opaque origin.)

import http from "node:http";
import { randomBytes, timingSafeEqual } from "node:crypto";

/** The route the tab's page lives under (prefix match, gateway auth). */
export const MEMORY_ROUTE = "/plugins/lossless/memory";

/** The Control UI descriptor of the tab. */
export const MEMORY_TAB = Object.freeze({
  surface: "tab",
  id: "memory",
  label: "Memory",
  description: "What the lossless engine stores: sessions, the summary DAG, the context and why, search.",
  icon: "brain",
  group: "agent",
  path: `${MEMORY_ROUTE}/`,
  slug: "memory",
  requiredScopes: ["operator.read"],
});

/** Headers of the browser's request passed on to the explorer (no cookie, no authorization). */
const PASS_REQUEST = ["accept", "origin", "if-none-match", "if-modified-since"];
/** Headers of the explorer's answer passed back (no set-cookie). */
const PASS_RESPONSE = [
  "content-type",
  "content-length",
  "content-security-policy",
  "x-content-type-options",
  "referrer-policy",
  "cache-control",
  "access-control-allow-origin",
  "access-control-allow-credentials",
  "vary",
  "last-modified",
  "etag",
];

function refuse(res, code, text, req) {
  res.statusCode = code;
  // The frame's document has an opaque origin: without these its script
  // could not read why (a refusal holds no stored data).
  if (req?.headers.origin === "null") {
    res.setHeader("Access-Control-Allow-Origin", "null");
    res.setHeader("Access-Control-Allow-Credentials", "true");
  }
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Content-Security-Policy", "default-src 'none'; frame-ancestors 'self'");
  res.end(`lossless memory tab: ${text}\n`);
  return true;
}

/** The page's empty key element (ui.PageKeyMeta) and the query parameter (ui.PageKeyParam). */
const PAGE_KEY_META = '<meta name="lossless-page-key" content="">';
const PAGE_KEY_PARAM = "k";

/** Whether got is the page key (constant time). */
export function keyMatches(got, key) {
  if (typeof got !== "string") return false;
  const a = Buffer.from(got);
  const b = Buffer.from(key);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Whether the gateway config names operator roles (the tab then serves nothing). */
export function hasOperatorRoles(config) {
  const roles = config?.gateway?.roles;
  return roles != null && typeof roles === "object" && Object.keys(roles).length > 0;
}

/**
 * The route handler: proxies GET/HEAD under MEMORY_ROUTE to the explorer
 * of the engine process.
 *
 * @param {object} opts
 * @param {() => Promise<{url: string, token: string}>} opts.explorer where
 *   the engine process serves the explorer (the bridge's explorer method).
 * @param {() => object} [opts.config] the gateway's config (for gateway.roles).
 * @param {object} [opts.logger]
 */
export function createMemoryHandler({ explorer, config = () => undefined, logger, pageKey = randomBytes(24).toString("base64url") } = {}) {
  return async function handleMemory(req, res) {
    const url = new URL(req.url ?? "/", "http://gateway.invalid");
    if (url.pathname !== MEMORY_ROUTE && !url.pathname.startsWith(`${MEMORY_ROUTE}/`)) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD");
      return refuse(res, 405, "read-only: only GET and HEAD are served", req);
    }
    if (hasOperatorRoles(config())) {
      return refuse(res, 403, "not served on a gateway with operator roles (gateway.roles): the engine's store cannot tell which agents and sessions a role may see", req);
    }
    if (url.pathname === MEMORY_ROUTE) {
      res.statusCode = 308;
      res.setHeader("Location", `${MEMORY_ROUTE}/${url.search}`);
      res.end();
      return true;
    }
    const sub = url.pathname.slice(MEMORY_ROUTE.length); // "/", "/app.js", "/api/..."
    if (sub.startsWith("/api/") && !keyMatches(url.searchParams.get(PAGE_KEY_PARAM), pageKey)) {
      return refuse(res, 403, "API requests are answered for the Memory tab's own page only (reload the tab)", req);
    }
    let where;
    try {
      where = await explorer();
    } catch (err) {
      logger?.warn?.(`lossless: memory tab: the engine's explorer is not available: ${err?.message ?? err}`);
      return refuse(res, 503, `the engine's memory explorer is not available: ${err?.message ?? err}`, req);
    }
    const target = new URL(sub.slice(1) + url.search, where.url);
    const headers = { "X-Lossless-Token": where.token, "X-Lossless-Embed": "frame" };
    for (const name of PASS_REQUEST) {
      const v = req.headers[name];
      if (typeof v === "string") headers[name] = v;
    }
    // The browser's own query token (if any) would be taken over the header's.
    target.searchParams.delete("token");
    target.searchParams.delete(PAGE_KEY_PARAM);
    const isPage = sub === "/";
    await new Promise((resolve) => {
      const up = http.request(target, { method: req.method, headers }, (ur) => {
        res.statusCode = ur.statusCode ?? 502;
        for (const name of PASS_RESPONSE) {
          const v = ur.headers[name];
          if (v !== undefined) res.setHeader(name, v);
        }
        if (!isPage || res.statusCode !== 200 || req.method !== "GET") {
          ur.pipe(res);
          ur.on("end", resolve);
          ur.on("error", resolve);
          return;
        }
        // The page: its key element filled in.
        const chunks = [];
        ur.on("data", (c) => chunks.push(c));
        ur.on("error", (err) => {
          res.destroy(err);
          resolve();
        });
        ur.on("end", () => {
          const html = Buffer.concat(chunks).toString("utf8");
          if (!html.includes(PAGE_KEY_META)) logger?.warn?.("lossless: memory tab: the explorer's page has no key element (an older engine binary?); its API requests will be refused");
          const body = Buffer.from(html.replace(PAGE_KEY_META, `<meta name="lossless-page-key" content="${pageKey}">`));
          res.setHeader("content-length", String(body.length));
          res.end(body);
          resolve();
        });
      });
      up.on("error", (err) => {
        if (!res.headersSent) refuse(res, 502, `the engine's memory explorer did not answer: ${err.message}`, req);
        else res.destroy(err);
        resolve();
      });
      // The browser gone (or the answer sent): the upstream request ends too.
      res.on("close", () => up.destroy());
      up.end();
    });
    return true;
  };
}

/**
 * Registers the Memory tab: the gateway-auth route and the Control UI
 * descriptor. Does nothing when the host lacks either API (an older
 * OpenClaw), and starts nothing: the engine process starts with the first
 * request that needs it.
 *
 * @param {object} api the plugin API.
 * @param {object} opts
 * @param {() => Promise<{url: string, token: string}>} opts.explorer
 */
export function registerMemoryTab(api, { explorer }) {
  const register = api?.session?.controls?.registerControlUiDescriptor ?? api?.registerControlUiDescriptor;
  if (typeof api?.registerHttpRoute !== "function" || typeof register !== "function") return false;
  api.registerHttpRoute({
    path: MEMORY_ROUTE,
    auth: "gateway",
    match: "prefix",
    handler: createMemoryHandler({ explorer, config: () => api.config, logger: api.logger }),
  });
  register.call(api?.session?.controls?.registerControlUiDescriptor ? api.session.controls : api, { ...MEMORY_TAB });
  return true;
}
