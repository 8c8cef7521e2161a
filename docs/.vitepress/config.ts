import { defineConfig } from "vitepress";

// The site's pages are the Markdown files under docs/; the API reference is TypeDoc's HTML, written to
// the site's api/ folder by `npm run docs` after VitePress builds, and served as it is.
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
      { text: "API", link: "/api/index.html", target: "_self" },
    ],
    sidebar: [
      {
        text: "Guide",
        items: [
          { text: "Getting started", link: "/guide/getting-started" },
          { text: "How it fits together", link: "/guide/overview" },
          { text: "The harness", link: "/guide/harness" },
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
          { text: "Redis", link: "/stores/redis" },
          { text: "libSQL and Turso", link: "/stores/libsql" },
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
          { text: "API (TypeDoc)", link: "/api/index.html", target: "_self" },
          { text: "Development", link: "/development" },
        ],
      },
    ],
    socialLinks: [{ icon: "github", link: "https://github.com/idemkey/idemkey" }],
  },
});
