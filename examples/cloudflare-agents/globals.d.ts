// idemkey's source reads `globalThis.crypto`, which workerd has; @cloudflare/workers-types declares it as a const,
// which TypeScript does not put on `typeof globalThis`.
declare var crypto: Crypto;
