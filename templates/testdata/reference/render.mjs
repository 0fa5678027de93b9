// render.mjs renders chat templates with @huggingface/jinja, the renderer
// behind transformers.js apply_chat_template, so Prism's renderer can be
// compared with it byte for byte.
//
//   node render.mjs JINJA_DIR render < cases.json > results.json
//   node render.mjs JINJA_DIR bench N < case.json
//
// cases.json is {"cases":[{"name":..., "template":..., "context":{...}}]}.
// The context is passed as apply_chat_template passes it: messages, tools
// (null when absent), add_generation_prompt, the special tokens and extra
// variables, all in one object. Each result is {"name", "output"} or
// {"name", "error"} with the reference's error message.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [dir, mode, count] = process.argv.slice(2);
const entry = path.join(dir, "node_modules", "@huggingface", "jinja", "dist", "index.js");
const { Template } = await import(pathToFileURL(entry).href);
const input = JSON.parse(readFileSync(0, "utf8"));

if (mode === "render") {
	const results = input.cases.map((c) => {
		try {
			const template = new Template(c.template);
			return { name: c.name, output: template.render(c.context) };
		} catch (err) {
			return { name: c.name, error: String(err && err.message !== undefined ? err.message : err) };
		}
	});
	process.stdout.write(JSON.stringify(results, null, 1) + "\n");
} else if (mode === "bench") {
	// Parse once, render many times, like a server that caches the
	// compiled template per model.
	const c = input.cases[0];
	const template = new Template(c.template);
	const n = Number(count || 2000);
	for (let i = 0; i < Math.min(n, 500); i++) template.render(c.context); // warm-up
	const start = process.hrtime.bigint();
	for (let i = 0; i < n; i++) template.render(c.context);
	const ns = Number(process.hrtime.bigint() - start) / n;
	process.stdout.write(JSON.stringify({ name: c.name, ns_per_render: ns, renders: n }) + "\n");
} else {
	console.error("usage: node render.mjs JINJA_DIR render|bench [N] < cases.json");
	process.exit(2);
}
