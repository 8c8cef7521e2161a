import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll } from "vitest";

// Certificates made by `openssl` for the gateways' mTLS tests: a CA, the gateway's certificate (for 127.0.0.1), two
// clients the CA signed (alice and bob, `O=acme,CN=<name>`) and one it did not (mallory, who says CN=alice); alice's
// renewal (her subject, a new key and serial); and two pairs of subjects that Node's parsed subject object reads alike
// (a repeated attribute type apart or together; one RDN of two attributes or two RDNs of one).
const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/** Who holds a certificate in the test PKI. */
export type Holder =
  | "ca"
  | "gateway"
  | "alice"
  | "bob"
  | "mallory"
  | "aliceRenewed"
  | "ouApart"
  | "ouTogether"
  | "oneRdn"
  | "twoRdns";

/** The subjects of the look-alike holders, as the gateway's `--scope-mtls subject` names them. */
export const LOOKALIKES = {
  ouApart: "OU=x,CN=c,OU=y",
  ouTogether: "OU=x,OU=y,CN=c",
  oneRdn: "CN=c+O=z",
  twoRdns: "CN=c,O=z",
} as const;

/**
 * The test PKI, made in `<parent>/pki` before the file's tests run: `file(name, "crt" | "key")` is the path of a
 * holder's certificate or key, `read` its contents.
 */
export function testPki(parent: string) {
  const dir = join(parent, "pki");
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });

  /** A key and a certificate for `subject`, signed by the test CA (or by itself, with `selfSigned`). */
  function certificate(name: Holder, subject: string, options: { selfSigned?: boolean; ext?: string } = {}) {
    if (options.selfSigned) {
      openssl(
        "req",
        "-x509",
        ...EC,
        "-keyout",
        `${name}.key`,
        "-out",
        `${name}.crt`,
        "-days",
        "1",
        "-subj",
        subject,
      );
      return;
    }
    // `-multivalue-rdn` reads `+` as joining two attributes into one RDN (`/CN=c+O=z`).
    openssl(
      "req",
      ...EC,
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
      "-multivalue-rdn",
      "-subj",
      subject,
    );
    const ext = [];
    if (options.ext) {
      writeFileSync(join(dir, `${name}.ext`), options.ext);
      ext.push("-extfile", `${name}.ext`);
    }
    openssl(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "1",
      ...ext,
    );
  }

  beforeAll(() => {
    mkdirSync(dir);
    openssl(
      "req",
      "-x509",
      ...EC,
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      "1",
      "-subj",
      "/CN=idemkey test CA",
    );
    certificate("gateway", "/CN=127.0.0.1", { ext: "subjectAltName=IP:127.0.0.1\n" });
    certificate("alice", "/O=acme/CN=alice");
    certificate("bob", "/O=acme/CN=bob");
    certificate("mallory", "/O=acme/CN=alice", { selfSigned: true });
    certificate("aliceRenewed", "/O=acme/CN=alice");
    certificate("ouApart", "/OU=x/CN=c/OU=y");
    certificate("ouTogether", "/OU=x/OU=y/CN=c");
    certificate("oneRdn", "/CN=c+O=z");
    certificate("twoRdns", "/CN=c/O=z");
  });

  const file = (name: Holder, kind: "crt" | "key") => join(dir, `${name}.${kind}`);
  return {
    file,
    read: (name: Holder, kind: "crt" | "key") => readFileSync(file(name, kind)),
    /** `--tls-cert` and `--tls-key` with the gateway's files, and `--tls-ca` with the CA's unless `ca` is false. */
    flags: ({ ca = true }: { ca?: boolean } = {}) => [
      "--tls-cert",
      file("gateway", "crt"),
      "--tls-key",
      file("gateway", "key"),
      ...(ca ? ["--tls-ca", file("ca", "crt")] : []),
    ],
  };
}
