// Every doc that names a test names one that exists and passed: the docs' guarantees cannot drift from the tests.
//
// A reference is a code span `test/dir/file.test.ts > describe title > test title` in README.md or any docs/**/*.md:
// the file from the repository root, then Vitest's describe titles and the test title, each joined by " > ". A
// reference that stops at a describe title covers every test under it; one that names only the file covers the file.
// A `|` inside a table cell is written `\|`, as Markdown needs, and is read as `|`.
//
//   node scripts/check-claims.mjs [--root dir] [label=]report.json...   (CI, after the test legs)
//     Each reference must match at least one test in the reports, and each test it matches must have passed in at
//     least one report (a test may run on some runtimes only). Default report: .tmp/vitest-report.json.
//   node scripts/check-claims.mjs [--root dir] --static                  (under `npm test`, test/docs/claims.test.ts)
//     Without reports: each file exists, and each title appears in its file's source or in a test module it imports.
//     A file that builds titles at run time (`it.each`, `describe.for`, a template or a variable as the title) may
//     report titles its source does not spell out: a title not found in such a file is left to the reports' check.
//
// Both modes also hold every table with a "shown by" column to it: each row names a test there, or says "not tested".
// One line per broken reference or row (doc:line), then a summary line; exit 1 when anything is broken, 2 on bad usage.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const REFERENCE = /^test\/[\w./-]+\.(?:test|check)\.[cm]?[jt]sx?(?: > .+)?$/;
const SEPARATOR = " > ";

function usage(message) {
  console.error(`check-claims: ${message}`);
  process.exit(2);
}

function parseArgs(argv) {
  const options = {
    root: resolve(dirname(fileURLToPath(import.meta.url)), ".."),
    static: false,
    reports: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--static") options.static = true;
    else if (arg === "--root") {
      if (argv[i + 1] === undefined) usage("--root needs a directory");
      options.root = resolve(argv[++i]);
    } else if (arg.startsWith("--")) usage(`unknown option ${arg}`);
    else options.reports.push(arg);
  }
  if (options.static && options.reports.length > 0) usage("--static takes no reports");
  if (!options.static && options.reports.length === 0) options.reports.push(".tmp/vitest-report.json");
  return options;
}

/** README.md and every .md under docs/ (not in dot folders or node_modules), as paths from the root. */
function docFiles(root) {
  const found = existsSync(join(root, "README.md")) ? ["README.md"] : [];
  const walk = (dir) => {
    if (!existsSync(join(root, dir))) return;
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    )) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".md")) found.push(path);
    }
  };
  walk("docs");
  return found;
}

/** The code spans of one line of Markdown (any number of backticks), with a `\|` read as `|`. */
function codeSpans(line) {
  const spans = [];
  const pattern = /(?<!`)(`+)(?!`)([\s\S]+?)(?<!`)\1(?!`)/g;
  for (const match of line.matchAll(pattern)) {
    let text = match[2];
    if (match[1].length > 1 && text.startsWith(" ") && text.endsWith(" ") && text.trim() !== "")
      text = text.slice(1, -1);
    spans.push(text.replaceAll("\\|", "|"));
  }
  return spans;
}

/** The cells of a table row, split on the pipes Markdown splits on (not `\|`). */
function cells(line) {
  const parts = line.trim().split(/(?<!\\)\|/);
  return parts.slice(1, parts.at(-1).trim() === "" ? -1 : undefined).map((cell) => cell.trim());
}

/** Every reference in the docs ({ doc, line, ref, file, path }) and every "shown by" row that names none. */
function scanDocs(root) {
  const references = [];
  const bareRows = [];
  const docs = docFiles(root);
  for (const doc of docs) {
    const lines = readFileSync(join(root, doc), "utf8").split("\n");
    let fenced = false;
    let shownBy = -1; // the "shown by" column of the table being read, -1 outside one
    lines.forEach((text, index) => {
      if (/^\s*(```|~~~)/.test(text)) fenced = !fenced;
      if (fenced) return;
      const refs = codeSpans(text).filter((span) => REFERENCE.test(span));
      for (const ref of refs) {
        const at = ref.indexOf(SEPARATOR);
        references.push({
          doc,
          line: index + 1,
          ref,
          file: at < 0 ? ref : ref.slice(0, at),
          path: at < 0 ? "" : ref.slice(at + SEPARATOR.length),
        });
      }
      if (!text.trimStart().startsWith("|")) {
        shownBy = -1;
        return;
      }
      const row = cells(text);
      const previous = lines[index - 1] ?? "";
      if (!previous.trimStart().startsWith("|")) {
        shownBy = row.findIndex((cell) => cell.toLowerCase() === "shown by");
        return;
      }
      if (shownBy < 0 || row.every((cell) => /^:?-+:?$/.test(cell))) return;
      const cell = row[shownBy] ?? "";
      const named = codeSpans(cell).some((span) => REFERENCE.test(span));
      if (!named && !/\bnot tested\b/i.test(cell))
        bareRows.push({
          doc,
          line: index + 1,
          why: 'a "shown by" cell names no test and does not say "not tested"',
        });
    });
  }
  return { docs, references, bareRows };
}

// --- static: the source of the test file and the test modules it imports --------------------------------------

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g;
// Titles made at run time: .each/.for tables, or a describe/it/test whose title is a template with ${} or not a
// string literal at all (a variable, a call).
const DYNAMIC = [
  /\.(?:each|for)\s*[(`]/,
  /(?<![.\w$])(?:describe|it|test|suite)(?:\.\w+(?:\([^()]*\))?)*\(\s*(?:`[^`]*\$\{|[\w$[(])/,
];

function resolveModule(from, spec) {
  const base = resolve(dirname(from), spec);
  const candidates = [base, base.replace(/\.[cm]?js$/, ".ts"), `${base}.ts`, join(base, "index.ts")];
  return candidates.find((path) => existsSync(path) && statSync(path).isFile());
}

/** The file and every module it imports by a relative path inside the repository, transitively. */
function sources(root, file, cache) {
  if (cache.has(file)) return cache.get(file);
  const seen = new Map();
  const queue = [join(root, file)];
  while (queue.length > 0) {
    const path = queue.pop();
    if (seen.has(path) || !path.startsWith(root + sep) || path.includes(`${sep}node_modules${sep}`)) continue;
    const text = readFileSync(path, "utf8");
    seen.set(path, text);
    for (const match of text.matchAll(IMPORT)) {
      const next = resolveModule(path, match[1]);
      if (next !== undefined && /\.[cm]?[jt]sx?$/.test(next)) queue.push(next);
    }
  }
  const texts = [...seen.values()];
  const result = { texts, dynamic: texts.some((text) => DYNAMIC.some((pattern) => pattern.test(text))) };
  cache.set(file, result);
  return result;
}

/** Whether a title is spelled in one of the sources, as written or with the escapes a string literal needs. */
function spelled(title, texts) {
  const forms = new Set([
    title,
    JSON.stringify(title).slice(1, -1),
    title.replaceAll("\\", "\\\\").replaceAll("'", "\\'"),
    title.replaceAll("\\", "\\\\").replaceAll("`", "\\`"),
  ]);
  return texts.some((text) => [...forms].some((form) => text.includes(form)));
}

function checkStatic(root, references) {
  const broken = [];
  const cache = new Map();
  let leftToReports = 0;
  for (const reference of references) {
    if (!existsSync(join(root, reference.file))) {
      broken.push({ ...reference, why: "file missing" });
      continue;
    }
    if (reference.path === "") continue;
    const { texts, dynamic } = sources(root, reference.file, cache);
    const missing = reference.path.split(SEPARATOR).filter((title) => !spelled(title, texts));
    if (missing.length === 0) continue;
    if (dynamic) leftToReports++;
    else
      broken.push({
        ...reference,
        why: `no test with that name ("${missing[0]}" is not in the file's source)`,
      });
  }
  return {
    broken,
    note: leftToReports > 0 ? `, ${leftToReports} left to the reports' check (titles made at run time)` : "",
  };
}

// --- reports: what Vitest ran ---------------------------------------------------------------------------------

function readReports(root, args) {
  return args.map((arg) => {
    const at = arg.indexOf("=");
    // "label=report.json,pytest.xml" (.ci/run): the Vitest report is the first; pytest's tests are named through
    // the Vitest test that runs them (test/python/pytest.test.ts).
    const path = resolve(root, (at > 0 ? arg.slice(at + 1) : arg).split(",")[0]);
    let report;
    try {
      report = JSON.parse(readFileSync(path, "utf8"));
    } catch (error) {
      usage(`cannot read the report ${path}: ${error.message}`);
    }
    // file (from the root) -> test path ("describe > title") -> statuses
    const files = new Map();
    for (const file of report.testResults ?? []) {
      const name = isAbsolute(file.name) ? relative(root, file.name) : file.name;
      const tests = files.get(name.split(sep).join("/")) ?? new Map();
      for (const test of file.assertionResults ?? []) {
        const key = [...(test.ancestorTitles ?? []), test.title].join(SEPARATOR);
        tests.set(key, [...(tests.get(key) ?? []), test.status]);
      }
      files.set(name.split(sep).join("/"), tests);
    }
    return files;
  });
}

function checkReports(root, references, reports) {
  const broken = [];
  for (const reference of references) {
    if (!existsSync(join(root, reference.file))) {
      broken.push({ ...reference, why: "file missing" });
      continue;
    }
    const passed = new Map(); // test path -> passed in some report
    for (const files of reports) {
      for (const [path, statuses] of files.get(reference.file) ?? []) {
        if (reference.path !== "" && path !== reference.path && !path.startsWith(reference.path + SEPARATOR))
          continue;
        passed.set(path, passed.get(path) === true || statuses.includes("passed"));
      }
    }
    if (passed.size === 0) {
      const ran = reports.some((files) => files.has(reference.file));
      broken.push({
        ...reference,
        why: ran ? "no test with that name" : "no test from this file in any report",
      });
      continue;
    }
    const notPassed = [...passed].filter(([, ok]) => !ok).map(([path]) => path);
    if (notPassed.length > 0) {
      const which =
        reference.path === notPassed[0]
          ? ""
          : ` (${notPassed.length} of ${passed.size}, e.g. "${notPassed[0]}")`;
      broken.push({ ...reference, why: `not passed (skipped or failed) in any report${which}` });
    }
  }
  return { broken, note: ` against ${reports.length} report${reports.length === 1 ? "" : "s"}` };
}

const options = parseArgs(process.argv.slice(2));
const { docs, references, bareRows } = scanDocs(options.root);
const { broken, note } = options.static
  ? checkStatic(options.root, references)
  : checkReports(options.root, references, readReports(options.root, options.reports));
for (const item of broken) console.log(`${item.doc}:${item.line}: \`${item.ref}\`: ${item.why}`);
for (const row of bareRows) console.log(`${row.doc}:${row.line}: ${row.why}`);
const failures = broken.length + bareRows.length;
const referencedDocs = new Set(references.map((reference) => reference.doc)).size;
console.log(
  `claims: ${references.length} test references in ${referencedDocs} of ${docs.length} docs checked${note}: ` +
    `${broken.length} broken, ${bareRows.length} "shown by" rows naming no test`,
);
process.exit(failures > 0 ? 1 : 0);
