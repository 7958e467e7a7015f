// Compares two conformance result folders scenario by scenario: the go-sdk
// conformance server run directly, and the same server behind kiln in
// direct mode. Every scenario that passes directly must pass through kiln.
//
//   node compare.mjs REVISION DIRECT_RESULTS KILN_RESULTS
//
// Prints a table (scenario, direct, kiln) and the scenarios kiln loses.
// Exits 1 when kiln loses any (KILN_CONFORMANCE_DIRECT_STRICT=0 only
// reports them, for a look at a work in progress).
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

const [rev, directDir, kilnDir] = process.argv.slice(2);
if (!rev || !directDir || !kilnDir) {
  console.error("usage: compare.mjs REVISION DIRECT_RESULTS KILN_RESULTS");
  process.exit(2);
}

// outcomes maps scenario -> {pass, failed: [check ids]} from
// results/server-<scenario>-<timestamp>/checks.json.
function outcomes(dir) {
  const out = new Map();
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir)) {
    const m = entry.match(/^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/);
    const file = join(dir, entry, "checks.json");
    if (!m || !existsSync(file)) continue;
    let checks;
    try {
      checks = JSON.parse(readFileSync(file, "utf8"));
    } catch {
      checks = [{ id: "checks.json unreadable", status: "FAILURE" }];
    }
    const failed = checks.filter((c) => c.status === "FAILURE").map((c) => c.id);
    out.set(m[1], { pass: failed.length === 0, failed });
  }
  return out;
}

const direct = outcomes(directDir);
const kiln = outcomes(kilnDir);
const names = [...new Set([...direct.keys(), ...kiln.keys()])].sort();
const word = (o) => (o === undefined ? "not run" : o.pass ? "pass" : "FAIL");
const width = Math.max(8, ...names.map((n) => n.length));
const lost = [];
const lines = [`${"scenario".padEnd(width)}  direct   kiln`];
for (const n of names) {
  const d = direct.get(n);
  const k = kiln.get(n);
  lines.push(`${n.padEnd(width)}  ${word(d).padEnd(7)}  ${word(k)}`);
  if (d?.pass && !k?.pass) lost.push(`${n}: ${k ? "failed " + k.failed.join(", ") : "not run"}`);
}
const count = (m) => [...m.values()].filter((o) => o.pass).length;
console.log(`== conformance ${rev}: go-sdk everything-server directly vs behind kiln (expose: direct, bare stdio backend)`);
console.log(lines.join("\n"));
console.log(`scenarios passing: direct ${count(direct)}/${direct.size}, through kiln ${count(kiln)}/${kiln.size}`);
if (lost.length === 0) {
  console.log(`${rev}: kiln loses no scenario that passes directly`);
  process.exit(0);
}
console.log(`${rev}: ${lost.length} scenario(s) pass directly but not through kiln:`);
for (const l of lost) console.log(`  - ${l}`);
process.exit(process.env.KILN_CONFORMANCE_DIRECT_STRICT === "0" ? 0 : 1);
