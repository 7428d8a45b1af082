package search

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// referenceEvent parses an event with encoding/json, as the collector
// did before it had its own scanner: the oracle the scanner is held to.
func referenceEvent(line []byte) (Event, error) {
	type text struct {
		Text  *string `json:"text"`
		Bytes *string `json:"bytes"`
	}
	decode := func(t text) ([]byte, bool, error) {
		switch {
		case t.Text != nil:
			return []byte(*t.Text), true, nil
		case t.Bytes != nil:
			b, err := base64.StdEncoding.DecodeString(*t.Bytes)
			return b, true, err
		}
		return nil, false, nil
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Path         text   `json:"path"`
			Lines        text   `json:"lines"`
			LineNumber   *int   `json:"line_number"`
			BinaryOffset *int64 `json:"binary_offset"`
		} `json:"data"`
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, err
	}
	out := Event{Type: ev.Type}
	switch ev.Type {
	case "match", "context", "begin", "end":
	default:
		return out, nil
	}
	p, ok, err := decode(ev.Data.Path)
	if err != nil || !ok || len(p) == 0 {
		return Event{}, errors.New("no path")
	}
	out.Path = filepath.Clean(string(p))
	switch ev.Type {
	case "end":
		out.Binary = ev.Data.BinaryOffset != nil
	case "match", "context":
		t, ok, err := decode(ev.Data.Lines)
		if err != nil || !ok || ev.Data.LineNumber == nil || *ev.Data.LineNumber <= 0 {
			return Event{}, errors.New("no lines")
		}
		out.Line = *ev.Data.LineNumber
		out.Text = lineText(t)
	}
	return out, nil
}

// knownKeys are the keys the scanner reads; encoding/json also matches
// them case-insensitively, which the scanner deliberately does not.
var knownKeys = []string{"type", "data", "path", "lines", "text", "bytes", "line_number", "binary_offset"}

// comparable reports whether line is one the scanner and the reference
// must agree on: valid UTF-8 (encoding/json rewrites invalid bytes, the
// scanner keeps them) with no string that matches a known key only up to
// case.
func comparable(line []byte) bool {
	if !utf8.Valid(line) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		if s, ok := tok.(string); ok {
			for _, k := range knownKeys {
				if s != k && strings.EqualFold(s, k) {
					return false
				}
			}
		}
	}
}

// checkAgainstReference fails t when the scanner and the reference
// disagree on line.
func checkAgainstReference(t interface{ Fatalf(string, ...any) }, line []byte) {
	got, err := ParseRipgrepEvent(line)
	if err == nil && !json.Valid(line) {
		t.Fatalf("accepted invalid JSON %q", line)
	}
	if !comparable(line) {
		return
	}
	want, werr := referenceEvent(line)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%q: scanner error %v, reference error %v", line, err, werr)
	}
	if err == nil && got != want {
		t.Fatalf("%q:\n scanner   %+v\n reference %+v", line, got, want)
	}
}

// TestScanEventMatchesReference draws ripgrep-like events — known and
// unknown fields in any order, nulls, escapes, base64 payloads, nested
// values to skip — and holds the scanner to encoding/json's reading.
func TestScanEventMatchesReference(t *testing.T) {
	str := rapid.Custom(func(t *rapid.T) string {
		parts := rapid.SliceOfN(rapid.SampledFrom([]string{
			"a", "needle", " ", "é", "日本", "\"", "\\", "/", "\n", "\t", "\x01", "\u2028", "😀", "\ufffd",
		}), 0, 8).Draw(t, "parts")
		return strings.Join(parts, "")
	})
	// enc writes s as JSON, sometimes with every rune \u-escaped.
	enc := func(t *rapid.T, s string) string {
		if !rapid.Bool().Draw(t, "escape all") {
			b, _ := json.Marshal(s)
			return string(b)
		}
		var sb strings.Builder
		sb.WriteByte('"')
		for _, r := range s {
			if r < 0x10000 {
				sb.WriteString(`\u` + string(mustHex(r)))
			} else {
				b, _ := json.Marshal(string(r))
				sb.Write(b[1 : len(b)-1])
			}
		}
		sb.WriteByte('"')
		return sb.String()
	}
	value := rapid.Custom(func(t *rapid.T) string {
		return rapid.SampledFrom([]string{
			`null`, `0`, `-12.5e+3`, `true`, `false`, `[]`, `{}`, `[1,"x",{"a":[null]}]`,
			`{"secs":0,"nanos":24746,"human":"0.000025s"}`, `"text"`, `{"text":"shadow"}`,
		}).Draw(t, "value")
	})
	textObj := func(t *rapid.T, name string) string {
		switch rapid.IntRange(0, 4).Draw(t, name+" form") {
		case 0:
			return `null`
		case 1:
			return `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(str.Draw(t, name))) + `"}`
		case 2:
			return `{"text":null}`
		default:
			return `{"text":` + enc(t, str.Draw(t, name)) + `}`
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		var fields []string
		for _, k := range rapid.SliceOfN(rapid.SampledFrom([]string{"path", "lines", "line_number", "binary_offset", "absolute_offset", "submatches", "stats"}), 0, 7).Draw(t, "data keys") {
			v := value.Draw(t, k)
			switch k {
			case "path", "lines":
				v = textObj(t, k)
			case "line_number":
				v = rapid.SampledFrom([]string{"1", "31", "0", "-1", "null", "1.5", `"3"`}).Draw(t, "line")
			case "binary_offset":
				v = rapid.SampledFrom([]string{"null", "5", "0"}).Draw(t, "offset")
			}
			fields = append(fields, `"`+k+`":`+v)
		}
		typ := rapid.SampledFrom([]string{"begin", "match", "context", "end", "summary", "future"}).Draw(t, "type")
		top := []string{`"type":"` + typ + `"`, `"data":{` + strings.Join(fields, ",") + `}`}
		if rapid.Bool().Draw(t, "data first") {
			top[0], top[1] = top[1], top[0]
		}
		line := "{" + strings.Join(top, rapid.SampledFrom([]string{",", " , ", ",\t"}).Draw(t, "sep")) + "}"
		checkAgainstReference(t, []byte(line))
	})
}

func mustHex(r rune) []byte {
	const digits = "0123456789abcdef"
	return []byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]}
}

func TestScanEventEdges(t *testing.T) {
	for _, line := range []string{
		`null`, ` {"type":"match"} `, `{}`, `[]`, `"x"`, `{"type":"begin","data":{"path":{"text":"a"}}} x`,
		`{"type":"match","data":{"path":{"text":"a"},"lines":{"text":"b"},"line_number":9223372036854775808}}`,
		`{"type":"match","data":{"path":{"text":"a\ud800b"},"lines":{"text":"\ud83d\ude00"},"line_number":1}}`,
		`{"type":"match","data":{"path":{"text":"a\ud800\u0041"},"lines":{"text":"x"},"line_number":1}}`,
		`{"type":"match","data":{"path":{"text":"a\ud800\uzzzz"},"lines":{"text":"x"},"line_number":1}}`,
		`{"type":"match","data":{"path":{"text":"a"},"lines":{"text":"x"},"line_number":1,"line_number":null}}`,
		`{"type":"match","data":{"path":{"text":"a"},"lines":{"text":"x","text":null,"bytes":"eQ=="},"line_number":2}}`,
		`{"type":"end","data":{"path":{"text":"a"},"binary_offset":3,"binary_offset":null}}`,
		`{"type":"end","data":{"path":{"text":"a"},"binary_offset":1.5}}`,
		`{"type":"begin","data":{"path":{"text":"a"}},"data":{"path":{"bytes":"Yg=="}}}`,
		`{"type":"begin","data":{"path":{"text":"a\u0000"}}}`, "{\"type\":\"begin\",\"data\":{\"path\":{\"text\":\"a\x01\"}}}",
		`{"type":"begin","data":{"x":[[[[[[[[[[[[[[]]]]]]]]]]]]]],"path":{"text":"p"}}}`,
		`{"type":"begin","data":{"x":[1,],"path":{"text":"p"}}}`, `{"type":"begin",}`, `{"type" "begin"}`,
		`{"type":"begin","data":{"x":01}}`, `{"type":"begin","data":{"x":-}}`, `{"type":"begin","data":{"x":1.}}`,
		`{"type":"begin","data":{"x":tru}}`, `{"type":"begin","data":{"x":"\q"}}`,
	} {
		checkAgainstReference(t, []byte(line))
	}
	deep := strings.Repeat("[", maxJSONDepth+10) + strings.Repeat("]", maxJSONDepth+10)
	if _, err := ParseRipgrepEvent([]byte(`{"type":"begin","data":{"x":` + deep + `}}`)); err == nil {
		t.Fatal("nesting past maxJSONDepth was accepted")
	}
}

// TestScanEventRealStream holds the scanner to the reference on a
// captured ripgrep stream: matches, context, a binary file, a file name
// and a line that are not UTF-8 (sent as base64), escapes.
func TestScanEventRealStream(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "rg-sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range bytes.SplitSeq(bytes.TrimSpace(data), []byte("\n")) {
		checkAgainstReference(t, line)
		n++
	}
	if n < 4 {
		t.Fatalf("only %d events in the sample", n)
	}
}

// BenchmarkRipgrepCollector feeds the collector a captured stream of
// ripgrep --json output.
func BenchmarkRipgrepCollector(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "rg-sample.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		c := NewRipgrepCollector(Options{})
		if _, err := c.Write(data); err != nil {
			b.Fatal(err)
		}
	}
}
