package tool

import (
	"strconv"
	"unicode/utf8"
)

// MaxQuotedBytes bounds how much of a value a refusal quotes back: a
// model that sent a megabyte in a field gets the start of it, an
// ellipsis and its length, never the megabyte again.
const MaxQuotedBytes = 80

// quoted renders s as a Go-quoted string cut to MaxQuotedBytes on a rune
// boundary, saying how long the whole was when it cut.
func quoted(s string) string {
	if len(s) <= MaxQuotedBytes {
		return strconv.Quote(s)
	}
	cut := MaxQuotedBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]+"…") + " (" + strconv.Itoa(len(s)) + " bytes)"
}
