// Issue 36, "Done when" 2: the long session of long-session.test.mjs (46
// turns, default settings, a gateway restart after turn 15) in a 128K
// window; what it asserts: long-session-suite.mjs.

import { longSessionSuite } from "./long-session-suite.mjs";

longSessionSuite({ window: 128_000 });
