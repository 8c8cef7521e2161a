// The built documentation site's internal links, read from its HTML files without a browser (fast enough for every
// CI run): each link to a page of the site must name a file that exists and, with a #fragment, an id on that page;
// every page must be reachable by following links from the home page. `node scripts/check-links.mjs DIR` prints what
// is broken and exits 1, or prints the counts.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

/** The site-relative path a link names (`/guide/x.html`), or undefined for a link that leaves the site. */
function target(href, from) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("//")) return undefined;
  const url = new URL(href, `http://site${from}`);
  return { path: decodeURIComponent(url.pathname), id: decodeURIComponent(url.hash.slice(1)) };
}

/** The file a site path is served from: /x → x.html, /dir/ → dir/index.html, /x.html as is. */
function fileOf(dir, path) {
  const candidates = path.endsWith("/")
    ? [`${path}index.html`]
    : [path, `${path}.html`, `${path}/index.html`];
  return candidates.map((c) => join(dir, c)).find((f) => existsSync(f) && statSync(f).isFile());
}

export function checkSite(dir) {
  const pages = [];
  const walk = (at) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".html")) pages.push(path);
    }
  };
  walk(dir);
  const html = new Map(pages.map((p) => [p, readFileSync(p, "utf8")]));
  const ids = new Map(
    pages.map((p) => [p, new Set([...html.get(p).matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]))]),
  );
  const broken = [];
  const reached = new Set();
  const queue = [join(dir, "index.html")];
  let links = 0;
  while (queue.length > 0) {
    const page = queue.shift();
    if (reached.has(page)) continue;
    reached.add(page);
    const from = `/${relative(dir, page)}`;
    for (const [, raw] of html.get(page).matchAll(/<a\s[^>]*?href="([^"]*)"/g)) {
      const href = raw.replaceAll("&amp;", "&");
      const to = target(href, from);
      if (to === undefined) continue;
      links++;
      const file = fileOf(dir, to.path);
      if (file === undefined) {
        broken.push(`${from} -> ${href}: no such page`);
        continue;
      }
      if (to.id && file.endsWith(".html") && !ids.get(file)?.has(to.id))
        broken.push(`${from} -> ${href}: no id "${to.id}" on ${relative(dir, file)}`);
      if (file.endsWith(".html") && !reached.has(file)) queue.push(file);
    }
  }
  const unreached = pages
    .filter((p) => !reached.has(p) && !p.endsWith("/404.html"))
    .map((p) => relative(dir, p));
  return { pages: pages.length, links, broken, unreached };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = process.argv[2];
  if (!dir || process.argv.length > 3) {
    console.error("usage: node scripts/check-links.mjs <built site folder>");
    process.exit(2);
  }
  const { pages, links, broken, unreached } = checkSite(dir);
  for (const line of broken) console.error(`broken link: ${line}`);
  for (const page of unreached) console.error(`unreachable page: ${page}`);
  console.log(
    `links: ${links} internal links on ${pages} pages; ${broken.length} broken, ${unreached.length} unreachable`,
  );
  process.exit(broken.length + unreached.length > 0 ? 1 : 0);
}
