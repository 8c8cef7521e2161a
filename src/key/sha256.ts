/**
 * SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104) in plain JavaScript, synchronous, for runtimes without
 * `node:crypto` (workerd without `nodejs_compat`, a browser). Web Crypto's `subtle.digest` is there but only async,
 * and a key is derived synchronously. `hash.ts` uses node:crypto whenever the runtime has it; this is the fallback,
 * checked against NIST's and RFC 4231's vectors and against node:crypto on random inputs (test/key/sha256.test.ts).
 */

/** FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

/** FIPS 180-4 section 5.3.3: the initial hash value. */
const H0 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

const BLOCK = 64;
const W = new Int32Array(64);
const encoder = new TextEncoder();

/** One 512-bit block of `bytes` at `offset` folded into `h` (FIPS 180-4 section 6.2.2). */
function compress(h: Int32Array, bytes: Uint8Array, offset: number): void {
  for (let t = 0; t < 16; t++) {
    const i = offset + 4 * t;
    W[t] = (bytes[i]! << 24) | (bytes[i + 1]! << 16) | (bytes[i + 2]! << 8) | bytes[i + 3]!;
  }
  for (let t = 16; t < 64; t++) {
    const w15 = W[t - 15]!;
    const w2 = W[t - 2]!;
    const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
    const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
    W[t] = (W[t - 16]! + s0 + W[t - 7]! + s1) | 0;
  }
  let a = h[0]!;
  let b = h[1]!;
  let c = h[2]!;
  let d = h[3]!;
  let e = h[4]!;
  let f = h[5]!;
  let g = h[6]!;
  let k = h[7]!;
  for (let t = 0; t < 64; t++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const ch = (e & f) ^ (~e & g);
    const t1 = (k + S1 + ch + K[t]! + W[t]!) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const maj = (a & b) ^ (a & c) ^ (b & c);
    const t2 = (S0 + maj) | 0;
    k = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] = (h[0]! + a) | 0;
  h[1] = (h[1]! + b) | 0;
  h[2] = (h[2]! + c) | 0;
  h[3] = (h[3]! + d) | 0;
  h[4] = (h[4]! + e) | 0;
  h[5] = (h[5]! + f) | 0;
  h[6] = (h[6]! + g) | 0;
  h[7] = (h[7]! + k) | 0;
}

/** The 32-byte SHA-256 digest of `data` (a string is hashed as its UTF-8 bytes). */
export function sha256(data: string | Uint8Array): Uint8Array {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  const length = bytes.byteLength;
  const h = new Int32Array(H0);
  const whole = length - (length % BLOCK);
  for (let offset = 0; offset < whole; offset += BLOCK) compress(h, bytes, offset);
  // Padding (section 5.1.1): 0x80, zeros, then the length in bits as 64 big-endian bits; one block or two.
  const rest = length - whole;
  const tail = new Uint8Array(rest < 56 ? BLOCK : 2 * BLOCK);
  tail.set(bytes.subarray(whole));
  tail[rest] = 0x80;
  const end = tail.length;
  const high = Math.floor(length / 0x20000000);
  const low = (length << 3) >>> 0;
  tail[end - 8] = high >>> 24;
  tail[end - 7] = high >>> 16;
  tail[end - 6] = high >>> 8;
  tail[end - 5] = high;
  tail[end - 4] = low >>> 24;
  tail[end - 3] = low >>> 16;
  tail[end - 2] = low >>> 8;
  tail[end - 1] = low;
  for (let offset = 0; offset < end; offset += BLOCK) compress(h, tail, offset);
  const digest = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const word = h[i]!;
    digest[4 * i] = word >>> 24;
    digest[4 * i + 1] = word >>> 16;
    digest[4 * i + 2] = word >>> 8;
    digest[4 * i + 3] = word;
  }
  return digest;
}

/** HMAC-SHA-256 of `data` under `secret` (RFC 2104 with B = 64; strings as their UTF-8 bytes). */
export function hmacSha256(secret: string | Uint8Array, data: string | Uint8Array): Uint8Array {
  let key = typeof secret === "string" ? encoder.encode(secret) : secret;
  if (key.byteLength > BLOCK) key = sha256(key);
  const message = typeof data === "string" ? encoder.encode(data) : data;
  const inner = new Uint8Array(BLOCK + message.byteLength);
  const outer = new Uint8Array(BLOCK + 32);
  for (let i = 0; i < BLOCK; i++) {
    const byte = i < key.byteLength ? key[i]! : 0;
    inner[i] = byte ^ 0x36;
    outer[i] = byte ^ 0x5c;
  }
  inner.set(message, BLOCK);
  outer.set(sha256(inner), BLOCK);
  return sha256(outer);
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Lowercase hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i++) text += HEX[bytes[i]!];
  return text;
}
