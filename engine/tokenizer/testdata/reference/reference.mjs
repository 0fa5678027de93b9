// Produces the reference token ids the Go tests compare against, using
// transformers.js (the Hugging Face tokenizers pipeline in JavaScript).
//
//   node reference.mjs request.json > vectors.json
//
// request.json: {"module": "<path of @huggingface/transformers>",
//                "dir": "<tokenizer folder>", "corpus": [...strings],
//                "random": [...strings], "big": "<path of the large input>"}
// The Go test `go test ./engine/tokenizer -run TestParity -update` writes
// the request, installs the reference when needed and runs this script.
import fs from "node:fs";
import crypto from "node:crypto";
import { pathToFileURL } from "node:url";

const req = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const mod = await import(pathToFileURL(req.module).href);
const tj = JSON.parse(fs.readFileSync(req.dir + "/tokenizer.json", "utf8"));
const tc = JSON.parse(fs.readFileSync(req.dir + "/tokenizer_config.json", "utf8"));
const tok = new mod.PreTrainedTokenizer(tj, tc);

const sha = (s) => crypto.createHash("sha256").update(s, "utf8").digest("hex");
const decode = (ids, skip) => (ids.length === 0 ? "" : tok.decode(ids, { skip_special_tokens: skip }));

const cases = req.corpus.map((text) => {
  const ids = tok.encode(text, { add_special_tokens: false });
  const special = tok.encode(text, { add_special_tokens: true });
  const prefixes = [];
  for (let k = 1; k <= ids.length; k++) prefixes.push(decode(ids.slice(0, k), false));
  return {
    ids,
    special_ids: special,
    decoded: decode(ids, false),
    decoded_skip: decode(special, true),
    prefix_sha256: sha(prefixes.join("\u0000")),
  };
});

// 32-bit FNV-1a, over the ids as little-endian int32 or over UTF-8 text.
const fnv = (bytes) => {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
};
const idBytes = (ids) => {
  const buf = Buffer.alloc(ids.length * 4);
  ids.forEach((id, i) => buf.writeInt32LE(id, i * 4));
  return buf;
};
const random = (req.random ?? []).map((text) => {
  const ids = tok.encode(text, { add_special_tokens: false });
  return fnv(idBytes(ids)) + ":" + fnv(Buffer.from(decode(ids, false), "utf8"));
});

let big = null;
if (req.big) {
  const text = fs.readFileSync(req.big, "utf8");
  const t0 = performance.now();
  const ids = tok.encode(text, { add_special_tokens: false });
  const ms = performance.now() - t0;
  const buf = Buffer.alloc(ids.length * 4);
  ids.forEach((id, i) => buf.writeInt32LE(id, i * 4));
  big = {
    bytes: Buffer.byteLength(text, "utf8"),
    n_ids: ids.length,
    ids_sha256: crypto.createHash("sha256").update(buf).digest("hex"),
    decoded_sha256: sha(decode(ids, false)),
    encode_ms: Math.round(ms),
  };
}

const pkg = JSON.parse(fs.readFileSync(new URL("../package.json", pathToFileURL(req.module)), "utf8"));
process.stdout.write(
  JSON.stringify({ reference: `${pkg.name}@${pkg.version}`, cases, random, big }, null, 0) + "\n",
);
