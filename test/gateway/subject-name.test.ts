import { describe, expect, it } from "vitest";
import { subjectName } from "../../src/gateway/subject-name.js";

// `subjectName` on certificates built here byte by byte: only the TBSCertificate's shape matters to it (nothing is
// verified), so each test says exactly which subject DER it reads. The gateways' mTLS tests read real certificates.

const tlv = (tag: number, ...contents: Uint8Array[]): Uint8Array => {
  const body = Buffer.concat(contents);
  const length =
    body.length < 0x80
      ? [body.length]
      : body.length < 0x100
        ? [0x81, body.length]
        : [0x82, body.length >> 8, body.length & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
};
const oid = (hex: string) => tlv(0x06, Buffer.from(hex, "hex"));
const CN = oid("550403");
const O = oid("55040a");
const OU = oid("55040b");
const C = oid("550406");
const utf8 = (text: string) => tlv(0x0c, Buffer.from(text, "utf8"));
const printable = (text: string) => tlv(0x13, Buffer.from(text, "latin1"));
const attribute = (type: Uint8Array, value: Uint8Array) => tlv(0x30, type, value);
const rdn = (...attributes: Uint8Array[]) => tlv(0x31, ...attributes);

/** A certificate whose subject is `rdns` (with a version field unless `v1`). */
function certificate(rdns: Uint8Array[], { v1 = false } = {}): Uint8Array {
  const issuer = tlv(0x30, rdn(attribute(CN, utf8("CA"))));
  const tbs = tlv(
    0x30,
    ...(v1 ? [] : [tlv(0xa0, tlv(0x02, Buffer.from([2])))]),
    tlv(0x02, Buffer.from([1])),
    tlv(0x30, oid("2a8648ce3d040302")),
    issuer,
    tlv(0x30),
    tlv(0x30, ...rdns),
    tlv(0x30),
  );
  return tlv(0x30, tbs, tlv(0x30), tlv(0x03, Buffer.from([0])));
}

const name = (...rdns: Uint8Array[]) => subjectName(certificate(rdns));

describe("subjectName: a certificate's subject, read from its DER", () => {
  it("names each attribute in the certificate's order, an RDN's attributes joined by +", () => {
    expect(
      name(
        rdn(attribute(C, printable("US"))),
        rdn(attribute(O, utf8("acme"))),
        rdn(attribute(CN, utf8("al"))),
      ),
    ).toBe("C=US,O=acme,CN=al");
    expect(
      name(rdn(attribute(OU, utf8("x"))), rdn(attribute(CN, utf8("c"))), rdn(attribute(OU, utf8("y")))),
    ).toBe("OU=x,CN=c,OU=y");
    expect(name(rdn(attribute(CN, utf8("c")), attribute(O, utf8("z"))))).toBe("CN=c+O=z");
    expect(subjectName(certificate([rdn(attribute(CN, utf8("v1")))], { v1: true }))).toBe("CN=v1");
    expect(name()).toBe("");
  });

  it("writes other attribute types as dotted OIDs, and values of other types or bad UTF-8 as # and their DER", () => {
    expect(name(rdn(attribute(oid("2a0304"), utf8("v"))))).toBe("1.2.3.4=v");
    expect(name(rdn(attribute(oid("8837"), utf8("v"))))).toBe("2.999=v");
    expect(name(rdn(attribute(CN, tlv(0x1e, Buffer.from("0061", "hex")))))).toBe("CN=#1e020061");
    expect(name(rdn(attribute(CN, tlv(0x0c, Buffer.from("ff", "hex")))))).toBe("CN=#0c01ff");
    expect(name(rdn(attribute(CN, utf8("é"))))).toBe("CN=é");
  });

  it("escapes as RFC 4514 does, so that no value reads as a separator, a hex value or another value's end", () => {
    expect(name(rdn(attribute(CN, utf8('a,b+c=d\\e"f<g>h;i'))))).toBe(
      'CN=a\\,b\\+c\\=d\\\\e\\"f\\<g\\>h\\;i',
    );
    expect(name(rdn(attribute(CN, utf8("#x"))))).toBe("CN=\\#x");
    expect(name(rdn(attribute(CN, utf8(" a "))))).toBe("CN=\\ a\\ ");
    expect(name(rdn(attribute(CN, utf8(" "))))).toBe("CN=\\ ");
    expect(name(rdn(attribute(CN, utf8("a\0b"))))).toBe("CN=a\\00b");
  });

  it("reads no two subject DERs alike (beyond a value's string type)", () => {
    const subjects = [
      [rdn(attribute(CN, utf8("a,CN=b")))],
      [rdn(attribute(CN, utf8("a"))), rdn(attribute(CN, utf8("b")))],
      [rdn(attribute(CN, utf8("a+O=b")))],
      [rdn(attribute(CN, utf8("a")), attribute(O, utf8("b")))],
      [rdn(attribute(CN, utf8("a")))],
      [rdn(attribute(CN, utf8("a ")))],
      [rdn(attribute(CN, utf8(" ")))],
      [rdn(attribute(CN, utf8("\\ ")))],
      [rdn(attribute(CN, utf8("\\")))],
      [rdn(attribute(CN, utf8("#0c0161")))],
      [rdn(attribute(CN, tlv(0x1e, Buffer.from("0061", "hex"))))],
      [rdn(attribute(CN, utf8("\0")))],
      [rdn(attribute(CN, utf8("\\00")))],
      [rdn(attribute(oid("550403"), utf8("a")), attribute(CN, utf8("b")))],
    ];
    const names = subjects.map((rdns) => subjectName(certificate(rdns)));
    expect(new Set(names).size).toBe(subjects.length);
  });

  it("refuses what is not a certificate", () => {
    expect(() => subjectName(Buffer.from("3003020101", "hex"))).toThrow();
    expect(() => subjectName(Buffer.from("3080", "hex"))).toThrow(/length|ends early/);
  });
});
