import { existsSync, readFileSync } from "node:fs";
import { defineConfig } from "vitepress";

// The site's pages are the Markdown files under docs/, the API reference among them: `npm run docs` has TypeDoc
// write it as Markdown into docs/api/ (typedoc-plugin-markdown) with its sidebar (typedoc-vitepress-theme), one page
// per subpath, before VitePress builds. Without it (docs:dev before a build) the API group is empty.
const apiSidebar = new URL("../api/typedoc-sidebar.json", import.meta.url);
const api: { text: string; link: string }[] = existsSync(apiSidebar)
  ? JSON.parse(readFileSync(apiSidebar, "utf8"))
  : [];
export default defineConfig({
  title: "idemkey",
  description: "Make AI agents' tool calls take effect once.",
  head: [["link", { rel: "icon", href: "/favicon.svg", type: "image/svg+xml" }]],
  cleanUrls: false,
  lastUpdated: false,
  // The repository's own files (src/, test/) are linked on GitHub; every link between pages must resolve.
  ignoreDeadLinks: false,
  themeConfig: {
    search: { provider: "local" },
    nav: [
      { text: "Guide", link: "/guide/getting-started" },
      { text: "Integrations", link: "/integrations/" },
      { text: "Stores", link: "/stores/" },
      { text: "API", link: "/api/index" },
    ],
    sidebar: [
      {
        text: "Guide",
        items: [
          { text: "Getting started", link: "/guide/getting-started" },
          { text: "How it fits together", link: "/guide/overview" },
          { text: "The harness", link: "/guide/harness" },
          { text: "What is guaranteed", link: "/guide/guarantees" },
          { text: "Examples", link: "/guide/examples" },
          { text: "The chaos demo and suite", link: "/guide/chaos" },
        ],
      },
      {
        text: "Integrations",
        items: [
          { text: "Task ids and outcomes", link: "/integrations/" },
          { text: "MCP", link: "/integrations/mcp" },
          { text: "A2A", link: "/integrations/a2a" },
          { text: "Vercel AI SDK", link: "/integrations/ai" },
          { text: "OpenAI Agents SDK", link: "/integrations/openai-agents" },
          { text: "LangGraph and LangChain", link: "/integrations/langgraph" },
          { text: "Mastra", link: "/integrations/mastra" },
          { text: "Claude Agent SDK", link: "/integrations/claude-agent-sdk" },
          { text: "OpenTelemetry", link: "/integrations/otel" },
          { text: "Cloudflare Agents SDK", link: "/cloudflare" },
          { text: "Durable engines", link: "/engines/" },
        ],
      },
      {
        text: "Stores",
        items: [
          { text: "The store contract", link: "/stores/" },
          { text: "Memory", link: "/stores/memory" },
          { text: "SQLite", link: "/stores/sqlite" },
          { text: "PostgreSQL", link: "/stores/postgres" },
          { text: "MySQL and MariaDB", link: "/stores/mysql" },
          { text: "Redis", link: "/stores/redis" },
          { text: "libSQL and Turso", link: "/stores/libsql" },
          { text: "DynamoDB", link: "/stores/dynamodb" },
          { text: "Cloudflare D1 and Durable Objects", link: "/stores/cloudflare" },
          { text: "Clusters and failover", link: "/stores/failover" },
          { text: "A store of your own", link: "/stores/custom" },
        ],
      },
      {
        text: "The owner's half",
        items: [
          { text: "Hono, Express, Fastify", link: "/owner/middleware" },
          { text: "Forwarding the key: fetch", link: "/owner/fetch" },
          { text: "effectOnce", link: "/owner/effect-once" },
        ],
      },
      {
        text: "Operating it",
        items: [
          { text: "The gateway", link: "/gateway" },
          { text: "The inspector", link: "/inspector" },
          { text: "The reconciler", link: "/reconciler" },
          { text: "Benchmarks", link: "/benchmarks" },
        ],
      },
      {
        text: "How it works",
        items: [
          { text: "The claim protocol", link: "/claim-protocol" },
          { text: "The model check", link: "/protocol/model-check" },
          { text: "The integration contract", link: "/integration-contract" },
          { text: "The ledger format (specification)", link: "/ledger-format" },
          { text: "Python", link: "/python" },
        ],
      },
      {
        text: "Reference",
        items: [
          { text: "The key and canonical form", link: "/reference/key" },
          { text: "Errors", link: "/reference/errors" },
          { text: "CLI", link: "/reference/cli" },
          { text: "Runtimes", link: "/runtimes" },
          { text: "Development", link: "/development" },
        ],
      },
      // Links name pages without a trailing slash: "/api/" renders one href on the server and another in the browser
      // (a hydration mismatch on the page before it in the pager).
      {
        text: "API reference",
        collapsed: true,
        items: [{ text: "All modules", link: "/api/index" }, ...api],
      },
    ],
    socialLinks: [{ icon: "github", link: "https://github.com/idemkey/idemkey" }],
  },
});
