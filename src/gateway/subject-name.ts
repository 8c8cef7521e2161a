// A certificate's subject as `--scope-mtls subject` names the caller: read from the certificate's DER, never from
// Node's parsed subject, whose object groups a repeated attribute type under its first place and flattens an RDN of
// several attributes, so that `OU=x,CN=c,OU=y` and `OU=x,OU=y,CN=c`, or `CN=c+O=z` and `CN=c,O=z`, read alike.

// OpenSSL's short names for the attribute types a client certificate usually has: the names Node's parsed subject
// used, so that the scope of a plain subject (`O=acme,CN=billing`) is what it was. Other types are dotted OIDs.
const NAMES: Record<string, string> = {
  "2.5.4.3": "CN",
  "2.5.4.4": "SN",
  "2.5.4.5": "serialNumber",
  "2.5.4.6": "C",
  "2.5.4.7": "L",
  "2.5.4.8": "ST",
  "2.5.4.9": "street",
  "2.5.4.10": "O",
  "2.5.4.11": "OU",
  "2.5.4.12": "title",
  "2.5.4.42": "GN",
  "0.9.2342.19200300.100.1.1": "UID",
  "0.9.2342.19200300.100.1.25": "DC",
  "1.2.840.113549.1.9.1": "emailAddress",
};

const SEQUENCE = 0x30;
const SET = 0x31;
const OID = 0x06;
const UTF8_STRING = 0x0c;
const PRINTABLE_STRING = 0x13;
const IA5_STRING = 0x16;
const VERSION = 0xa0;

/** One DER element: its tag, where its contents start and end, and where the element itself started. */
interface Element {
  readonly tag: number;
  readonly at: number;
  readonly start: number;
  readonly end: number;
}

/**
 * The subject of the DER certificate `der`, in RFC 4514's syntax but in the certificate's order (the first RDN
 * first): `name=value` per attribute, the attributes of one RDN joined by `+`, RDNs by `,`. Values of the string
 * types (UTF8String, PrintableString, IA5String) are written as text with RFC 4514's escapes; any other value as `#`
 * and the hex of its DER. Two subjects that differ in their DER read differently, except for a value's string type,
 * which X.509 does not compare either (RFC 5280 section 7.1).
 */
export function subjectName(der: Uint8Array): string {
  const certificate = element(der, 0, der.length, SEQUENCE);
  const tbs = children(der, element(der, certificate.start, certificate.end, SEQUENCE));
  // TBSCertificate: [0] version (absent in v1), serialNumber, signature, issuer, validity, subject, ...
  const fields = tbs[0]?.tag === VERSION ? tbs.slice(1) : tbs;
  const subject = fields[4];
  if (subject?.tag !== SEQUENCE) throw new Error("the certificate has no subject");
  return children(der, subject)
    .map((rdn) => {
      if (rdn.tag !== SET) throw new Error("a subject RDN is not a SET");
      return children(der, rdn)
        .map((attribute) => {
          const [type, value, extra] = children(der, attribute);
          if (attribute.tag !== SEQUENCE || type?.tag !== OID || value === undefined || extra !== undefined) {
            throw new Error("a subject attribute is not a type and a value");
          }
          const oid = objectIdentifier(der.subarray(type.start, type.end));
          return `${NAMES[oid] ?? oid}=${attributeValue(der, value)}`;
        })
        .join("+");
    })
    .join(",");
}

function attributeValue(der: Uint8Array, value: Element): string {
  const bytes = der.subarray(value.start, value.end);
  let text: string | undefined;
  if (value.tag === UTF8_STRING) {
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch {
      text = undefined;
    }
  } else if ((value.tag === PRINTABLE_STRING || value.tag === IA5_STRING) && bytes.every((b) => b < 0x80)) {
    text = Buffer.from(bytes).toString("latin1");
  }
  if (text === undefined) return `#${Buffer.from(der.subarray(value.at, value.end)).toString("hex")}`;
  // RFC 4514 section 2.4 (and `=`, as Node's reading escaped it): no value's text reads as a separator, as a hex
  // value or as the end of another value.
  const chars = [...text];
  return chars
    .map((c, i) => {
      if (c === "\0") return "\\00";
      if (SPECIAL.has(c)) return `\\${c}`;
      if ((i === 0 && (c === " " || c === "#")) || (i === chars.length - 1 && c === " ")) return `\\${c}`;
      return c;
    })
    .join("");
}

const SPECIAL = new Set(["\\", ",", "+", "=", '"', "<", ">", ";"]);

/** The dotted form of an OBJECT IDENTIFIER's contents. */
function objectIdentifier(bytes: Uint8Array): string {
  const arcs: bigint[] = [];
  let arc = 0n;
  for (const [i, byte] of bytes.entries()) {
    arc = (arc << 7n) | BigInt(byte & 0x7f);
    if (byte & 0x80) {
      if (i === bytes.length - 1) throw new Error("an OID ends in the middle of an arc");
      continue;
    }
    if (arcs.length === 0) arcs.push(arc < 80n ? arc / 40n : 2n, arc < 80n ? arc % 40n : arc - 80n);
    else arcs.push(arc);
    arc = 0n;
  }
  if (arcs.length === 0) throw new Error("an empty OID");
  return arcs.join(".");
}

/** The elements inside `parent`, one after another. */
function children(der: Uint8Array, parent: Element): Element[] {
  const found: Element[] = [];
  for (let at = parent.start; at < parent.end; at = found[found.length - 1]!.end) {
    found.push(element(der, at, parent.end));
  }
  return found;
}

/** The DER element at `at`, which must end by `limit` (and have the tag `tag`, when given). */
function element(der: Uint8Array, at: number, limit: number, tag?: number): Element {
  if (at + 2 > limit) throw new Error("the certificate's DER ends early");
  const found = der[at]!;
  if ((found & 0x1f) === 0x1f) throw new Error("a DER tag in the high-tag-number form");
  if (tag !== undefined && found !== tag) throw new Error(`expected DER tag ${tag}, got ${found}`);
  let length = der[at + 1]!;
  let start = at + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    // DER has no indefinite length, and nothing in a certificate is 4 GiB long.
    if (octets === 0 || octets > 4 || start + octets > limit) throw new Error("a bad DER length");
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + der[start++]!;
  }
  if (start + length > limit) throw new Error("a DER element runs past its parent");
  return { tag: found, at, start, end: start + length };
}
