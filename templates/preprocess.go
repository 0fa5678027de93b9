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

// preprocess applies the environment's whitespace rules to the source,
// with the map of each rewrite back to its input.
func preprocess(src string) (string, []srcMap) {
	src = strings.TrimSuffix(src, "\n")
	group1 := func(string, []int) []int { return []int{1} }
	var maps []srcMap
	src, m := keepGroups(lstripBlocks, src, group1)
	maps = append(maps, m)
	src, m = keepGroups(trimBlocks, src, group1)
	maps = append(maps, m)
	if strings.Contains(src, "generation") {
		src, m = keepGroups(generationTags, src, func(src string, g []int) []int {
			// Groups: blanks before, the tag's two trim markers, blanks after.
			var keep []int
			if g[4] == g[5] {
				keep = append(keep, 1)
			}
			if g[6] == g[7] {
				keep = append(keep, 4)
			}
			return keep
		})
		maps = append(maps, m)
	}
	return src, maps
}
