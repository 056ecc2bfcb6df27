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
// - an API request whose Referer is not a page of this route on the same
//   host (403): the frame's API requests carry the grant cookie with
//   credentials "include" from an opaque origin, and the explorer answers
//   such requests with Access-Control-Allow-Origin: null; the Referer check
//   keeps another site's sandboxed frame from reading them while a grant is
//   alive.

import http from "node:http";

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

function refuse(res, code, text) {
  res.statusCode = code;
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Content-Security-Policy", "default-src 'none'; frame-ancestors 'self'");
  res.end(`lossless memory tab: ${text}\n`);
  return true;
}

/**
 * Whether an API request comes from a page of the route on this host: its
 * Referer names the same host and a path under the route.
 */
export function refererAllowed(req) {
  const ref = req.headers.referer;
  if (typeof ref !== "string" || ref === "") return false;
  let u;
  try {
    u = new URL(ref);
  } catch {
    return false;
  }
  return (u.protocol === "http:" || u.protocol === "https:") && u.host === req.headers.host && u.pathname.startsWith(`${MEMORY_ROUTE}/`);
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
export function createMemoryHandler({ explorer, config = () => undefined, logger } = {}) {
  return async function handleMemory(req, res) {
    const url = new URL(req.url ?? "/", "http://gateway.invalid");
    if (url.pathname !== MEMORY_ROUTE && !url.pathname.startsWith(`${MEMORY_ROUTE}/`)) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD");
      return refuse(res, 405, "read-only: only GET and HEAD are served");
    }
    if (hasOperatorRoles(config())) {
      return refuse(res, 403, "not served on a gateway with operator roles (gateway.roles): the engine's store cannot tell which agents and sessions a role may see");
    }
    if (url.pathname === MEMORY_ROUTE) {
      res.statusCode = 308;
      res.setHeader("Location", `${MEMORY_ROUTE}/${url.search}`);
      res.end();
      return true;
    }
    const sub = url.pathname.slice(MEMORY_ROUTE.length); // "/", "/app.js", "/api/..."
    if (sub.startsWith("/api/") && !refererAllowed(req)) {
      return refuse(res, 403, "API requests are answered for the Memory tab's own page only (its Referer)");
    }
    let where;
    try {
      where = await explorer();
    } catch (err) {
      logger?.warn?.(`lossless: memory tab: the engine's explorer is not available: ${err?.message ?? err}`);
      return refuse(res, 503, `the engine's memory explorer is not available: ${err?.message ?? err}`);
    }
    const target = new URL(sub.slice(1) + url.search, where.url);
    const headers = { "X-Lossless-Token": where.token, "X-Lossless-Embed": "frame" };
    for (const name of PASS_REQUEST) {
      const v = req.headers[name];
      if (typeof v === "string") headers[name] = v;
    }
    // The browser's own query token (if any) would be taken over the header's.
    target.searchParams.delete("token");
    await new Promise((resolve) => {
      const up = http.request(target, { method: req.method, headers }, (ur) => {
        res.statusCode = ur.statusCode ?? 502;
        for (const name of PASS_RESPONSE) {
          const v = ur.headers[name];
          if (v !== undefined) res.setHeader(name, v);
        }
        ur.pipe(res);
        ur.on("end", resolve);
        ur.on("error", resolve);
      });
      up.on("error", (err) => {
        if (!res.headersSent) refuse(res, 502, `the engine's memory explorer did not answer: ${err.message}`);
        else res.destroy(err);
        resolve();
      });
      req.on("close", () => up.destroy());
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
