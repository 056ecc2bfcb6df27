// Deterministic filler text for long turns: plain English-like prose from a
// fixed vocabulary (no word that the recall prompts of the tests use), so
// token counts are realistic (~4.5 characters a token) and nothing in it is
// relevant to the "unrelated" prompts.

const WORDS = (
  "ledger pipeline gasket lattice harbor quarry mill spindle copper valve turbine " +
  "schedule inventory freight bracket furnace crate anvil rivet pallet conveyor " +
  "warehouse invoice bearing sprocket chisel foundry lathe kiln bolt flange " +
  "the a of and to in with for on by from its their this that these those " +
  "inspects adjusts records measures stacks polishes loads sorts welds tightens " +
  "carefully slowly daily twice again nearby quietly evenly firmly"
).split(/\s+/);

/** A seeded PRNG (mulberry32). */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * About `chars` characters of sentences, the same for the same seed; with
 * lineChars, broken into lines of about that length.
 */
export function filler(chars, seed = 1, lineChars = 0) {
  const r = rng(seed);
  let out = "";
  while (out.length < chars) {
    const n = 8 + Math.floor(r() * 10);
    const words = [];
    for (let i = 0; i < n; i++) words.push(WORDS[Math.floor(r() * WORDS.length)]);
    const s = words.join(" ");
    out += s[0].toUpperCase() + s.slice(1) + ".";
    const line = out.length - out.lastIndexOf("\n") - 1;
    out += lineChars > 0 && line >= lineChars ? "\n" : " ";
  }
  return out.slice(0, chars).trimEnd() + ".";
}
