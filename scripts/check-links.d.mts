/** The types of check-links.mjs, for the test that imports it (test/docs/site.test.ts). */
export function checkSite(dir: string): {
  /** HTML files in the site. */
  pages: number;
  /** Internal links followed. */
  links: number;
  /** `from -> href: why`, one per link that names no page or no id on it. */
  broken: string[];
  /** Pages no chain of links from the home page reaches (404.html aside). */
  unreached: string[];
};
