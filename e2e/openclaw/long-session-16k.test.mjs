// Issue 36, "Done when" 2: the long session of long-session.test.mjs (46
// turns, default settings, a gateway restart after turn 15) in a 16K
// window; what it asserts: long-session-suite.mjs.
//
// At 16K OpenClaw's own part of a call (its system prompt and bootstrap
// files, the tool schemas, the turn's prompt and tool results) often leaves
// the answer no room whatever the engine does: a cut reply is a failure
// only on a call where that part left room for it.

import { longSessionSuite } from "./long-session-suite.mjs";

longSessionSuite({ window: 16_000 });
