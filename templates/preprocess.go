package templates

import (
	"regexp"
	"strings"
)

// The Hugging Face chat-template environment renders with trim_blocks and
// lstrip_blocks on. The reference renderer applies both as a rewrite of
// the source before lexing, and so does Prism: the same rules give the
// same whitespace, where the engine's own options strip differently
// (its lstrip_blocks also eats spaces before a block tag in mid-line).
var (
	// lstrip_blocks: blanks from the start of a line up to a block or
	// comment tag.
	lstripBlocks = regexp.MustCompile(`(?m)^[ \t]*(\{[#%-])`)
	// trim_blocks: the newline right after a block or comment tag.
	trimBlocks = regexp.MustCompile(`([#%-]\})\n`)
	// {% generation %} marks assistant text for training masks; rendering
	// drops the tags, keeping the whitespace around them unless the tag
	// trims it.
	generationTags = regexp.MustCompile(`(?s)(\s*)\{%(-?)\s*(?:end)?generation\s*(-?)%\}(\s*)`)
)

// preprocess applies the environment's whitespace rules to the source.
func preprocess(src string) string {
	src = strings.TrimSuffix(src, "\n")
	src = lstripBlocks.ReplaceAllString(src, "$1")
	src = trimBlocks.ReplaceAllString(src, "$1")
	if strings.Contains(src, "generation") {
		src = generationTags.ReplaceAllStringFunc(src, func(m string) string {
			g := generationTags.FindStringSubmatch(m)
			before, lstrip, rstrip, after := g[1], g[2], g[3], g[4]
			out := ""
			if lstrip == "" {
				out += before
			}
			if rstrip == "" {
				out += after
			}
			return out
		})
	}
	return src
}
