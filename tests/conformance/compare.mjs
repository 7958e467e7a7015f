// Compares two conformance result folders scenario by scenario: the go-sdk
// conformance server run directly, and the same server behind kiln in
// direct mode. Every scenario that passes directly must pass through kiln.
//
//   node compare.mjs REVISION DIRECT_RESULTS KILN_RESULTS [LOST_FILE]
//
// Prints a table (scenario, direct, kiln) and the scenarios kiln loses,
// each with its failed checks and their messages, and writes their names
// to LOST_FILE (one a line) so run.sh can run them again. Exits 1 when kiln
// loses any (KILN_CONFORMANCE_DIRECT_STRICT=0 only reports them, for a look
// at a work in progress).
//
//   node compare.mjs --again REVISION DIRECT_RESULTS KILN_RESULTS SCENARIO...
//
// compares only the SCENARIOs (a second run of the lost ones in
// KILN_RESULTS; one with no results there counts as lost) and prints the
// ones still lost, or nothing; exits 1 if any.
import { readdirSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const args = process.argv.slice(2);
const again = args[0] === "--again";
if (again) args.shift();
const [rev, directDir, kilnDir, ...rest] = args;
if (!rev || !directDir || !kilnDir || (again && rest.length === 0)) {
  console.error("usage: compare.mjs REVISION DIRECT_RESULTS KILN_RESULTS [LOST_FILE]");
  console.error("       compare.mjs --again REVISION DIRECT_RESULTS KILN_RESULTS SCENARIO...");
  process.exit(2);
}

// outcomes maps scenario -> {pass, failed: [check ids, with messages]} from
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
    const failed = checks
      .filter((c) => c.status === "FAILURE")
      .map((c) => (c.errorMessage ? `${c.id} (${oneLine(c.errorMessage)})` : c.id));
    out.set(m[1], { pass: failed.length === 0, failed });
  }
  return out;
}

// oneLine shortens a check's message to a line a CI log's tail can show.
function oneLine(msg) {
  const s = String(msg).replace(/\s+/g, " ").trim();
  return s.length > 160 ? s.slice(0, 157) + "..." : s;
}

const direct = outcomes(directDir);
const kiln = outcomes(kilnDir);
const lostIn = (names) =>
  names.filter((n) => direct.get(n)?.pass && !kiln.get(n)?.pass).map((n) => {
    const k = kiln.get(n);
    return { name: n, why: k ? "failed " + k.failed.join(", ") : "not run" };
  });

if (again) {
  const still = lostIn(rest);
  for (const l of still) console.log(`  - ${l.name}: ${l.why}`);
  process.exit(still.length === 0 ? 0 : 1);
}

const names = [...new Set([...direct.keys(), ...kiln.keys()])].sort();
const word = (o) => (o === undefined ? "not run" : o.pass ? "pass" : "FAIL");
const width = Math.max(8, ...names.map((n) => n.length));
const lines = [`${"scenario".padEnd(width)}  direct   kiln`];
for (const n of names) {
  const d = direct.get(n);
  const k = kiln.get(n);
  lines.push(`${n.padEnd(width)}  ${word(d).padEnd(7)}  ${word(k)}`);
}
const lost = lostIn(names);
const lostFile = rest[0];
if (lostFile) writeFileSync(lostFile, lost.map((l) => l.name + "\n").join(""));
const count = (m) => [...m.values()].filter((o) => o.pass).length;
console.log(`== conformance ${rev}: go-sdk everything-server directly vs behind kiln (expose: direct, bare stdio backend)`);
console.log(lines.join("\n"));
console.log(`scenarios passing: direct ${count(direct)}/${direct.size}, through kiln ${count(kiln)}/${kiln.size}`);
if (lost.length === 0) {
  console.log(`${rev}: kiln loses no scenario that passes directly`);
  process.exit(0);
}
console.log(`${rev}: ${lost.length} scenario(s) pass directly but not through kiln:`);
for (const l of lost) console.log(`  - ${l.name}: ${l.why}`);
process.exit(process.env.KILN_CONFORMANCE_DIRECT_STRICT === "0" ? 0 : 1);
