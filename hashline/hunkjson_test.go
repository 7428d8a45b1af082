package hashline

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// TestPropPlainDecodeAgreesWithGeneral draws hunk documents, mostly
// well formed, with the deviations the plain form leaves to the general
// path (keys in other cases or escaped, duplicates, nulls, numbers, \u
// escapes, invalid UTF-8, control characters, stray commas and bytes),
// and holds DecodeHunks, which tries decodePlain first, to decodeGeneral
// alone: the same hunks, or the same error. Control: decodePlain took
// some documents and left others.
func TestPropPlainDecodeAgreesWithGeneral(t *testing.T) {
	space := rapid.SampledFrom([]string{"", "", " ", "\n\t", "\r\n ", "\u00a0"})
	ops := rapid.SampledFrom([]string{`"replace"`, `"insert_before"`, `"insert_after"`, `"append"`, `"delete"`, `null`, `1`, `"rep\u006cace"`, `"replace`})
	refs := rapid.SampledFrom([]string{`"1:00000000"`, `"12:abcdef01"`, `"3:0123abcd"`, `null`, `"x"`, `"0:00000000"`, `5`, `"1:0000000"`, `"1:0000000\u0030"`})
	lines := rapid.SampledFrom([]string{`[]`, `["a"]`, `["a","b\tc"]`, `["a\"b\\c\/d"]`, `["\u00e9"]`, `["é", "ü\n"]`, "[\"\xff\"]", `[null]`, `null`, `"a"`, `["a\nb\r\n"]`, `["1:abcdef01|x"]`, `["\b\f\r"]`, "[\"\x01\"]", `["a",]`, `[ "x" , "y" ]`, `["\x"]`})
	keys := rapid.SampledFrom([]string{"op", "op", "start", "end", "lines", "lines", "Op", "LINES", "extra", `o\u0070`})
	plain, general := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		b.WriteString(space.Draw(t, "lead") + "[")
		n := rapid.IntRange(0, 3).Draw(t, "hunks")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(space.Draw(t, "s"))
			if rapid.IntRange(0, 15).Draw(t, "null hunk") == 0 {
				b.WriteString("null")
				continue
			}
			b.WriteString("{")
			fields := rapid.SliceOfN(keys, 0, 5).Draw(t, "keys")
			if rapid.IntRange(0, 3).Draw(t, "well formed") > 0 {
				fields = []string{"op", "start", "end", "lines"}[:rapid.IntRange(1, 4).Draw(t, "k")]
				if fields[len(fields)-1] != "lines" {
					fields = append(fields, "lines")
				}
			}
			for j, k := range fields {
				if j > 0 {
					b.WriteString(",")
				}
				b.WriteString(space.Draw(t, "s") + `"` + k + `"` + space.Draw(t, "s") + ":" + space.Draw(t, "s"))
				switch strings.ToLower(k) {
				case "op":
					b.WriteString(ops.Draw(t, "op"))
				case "start", "end":
					b.WriteString(refs.Draw(t, "ref"))
				default:
					b.WriteString(lines.Draw(t, "lines"))
				}
			}
			b.WriteString(space.Draw(t, "s") + "}")
		}
		b.WriteString(rapid.SampledFrom([]string{"]", "]", "]", ",]", "] x", "]]", ""}).Draw(t, "close") + space.Draw(t, "trail"))
		data := []byte(b.String())
		if _, ok := decodePlain([]byte(strings.TrimSpace(string(data)))); ok {
			plain++
		} else {
			general++
		}
		got, gotErr := DecodeHunks(data)
		want, wantErr := decodeGeneral([]byte(strings.TrimSpace(string(data))))
		if wantErr == nil {
			wantErr = ValidateHunks(want)
			if wantErr != nil {
				want = nil
			}
		}
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%q: error %v, the general path's %v", data, gotErr, wantErr)
		}
		var gh, wh *HunkError
		if errors.As(gotErr, &gh) != errors.As(wantErr, &wh) || gh != nil && gh.Code != wh.Code {
			t.Fatalf("%q: error %#v, the general path's %#v", data, gotErr, wantErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q: hunks (-general +DecodeHunks):\n%s", data, diff)
		}
	})
	if plain == 0 || general == 0 {
		t.Fatalf("decodePlain took %d documents and left %d: the property tested one path only", plain, general)
	}
}
