package lsp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// frame is a message with the given header lines and body.
func frame(body string, headers ...string) string {
	if headers == nil {
		headers = []string{fmt.Sprintf("Content-Length: %d", len(body))}
	}
	return strings.Join(headers, "\r\n") + "\r\n\r\n" + body
}

func TestCodecRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	msgs := []any{map[string]any{"jsonrpc": "2.0", "method": "m", "params": []int{1, 2}}, "x", 3.5, nil}
	for _, m := range msgs {
		if err := (codec{}).WriteObject(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(&buf)
	for _, want := range msgs {
		var got any
		if err := (codec{}).ReadObject(r, &got); err != nil {
			t.Fatal(err)
		}
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if !bytes.Equal(w, g) {
			t.Errorf("read %s, want %s", g, w)
		}
	}
	var v any
	if err := (codec{}).ReadObject(r, &v); err != io.EOF {
		t.Errorf("after the last message: %v, want io.EOF", err)
	}
}

func TestCodecAcceptsTheSpecificationsHeaders(t *testing.T) {
	for _, ct := range []string{
		"application/vscode-jsonrpc; charset=utf-8",
		"application/vscode-jsonrpc; charset=utf8",
		`application/vscode-jsonrpc; charset="UTF-8"`,
		"application/vscode-jsonrpc",
	} {
		msg := frame("{}", "Content-Type: "+ct, "Content-Length: 2")
		if _, err := readMessage(bufio.NewReader(strings.NewReader(msg))); err != nil {
			t.Errorf("Content-Type %q: %v", ct, err)
		}
	}
	msg := frame("[]", "content-length:2")
	if _, err := readMessage(bufio.NewReader(strings.NewReader(msg))); err != nil {
		t.Errorf("a lower-case header without a space: %v", err)
	}
}

func TestCodecRefusesWhatBreaksTheFraming(t *testing.T) {
	long := strings.Repeat("a", maxHeaderLineBytes)
	many := make([]string, maxHeaders+1)
	for i := range many {
		many[i] = "Content-Type: application/vscode-jsonrpc"
	}
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	values := "[" + strings.Repeat("0,", maxJSONValues) + "0]"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"a header line past the bound", frame("{}", "X-Long: "+long), "longer than"},
		{"more header lines than the bound", frame("{}", append(many, "Content-Length: 2")...), "more than"},
		{"an unknown header", frame("{}", "Content-Length: 2", "X-Custom: 1"), "unknown header"},
		{"a header without a colon", frame("{}", "Content-Length 2"), "no colon"},
		{"two lengths", frame("{}", "Content-Length: 2", "Content-Length: 2"), "two Content-Length"},
		{"no length", frame("{}", "Content-Type: application/vscode-jsonrpc"), "no Content-Length"},
		{"a signed length", frame("{}", "Content-Length: +2"), "not a decimal"},
		{"a negative length", frame("{}", "Content-Length: -2"), "not a decimal"},
		{"a hex length", frame("{}", "Content-Length: 0x2"), "not a decimal"},
		{"an empty length", frame("{}", "Content-Length: "), "not a decimal"},
		{"a length one past the bound", frame("{}", fmt.Sprintf("Content-Length: %d", MaxMessageBytes+1)), "over"},
		{"a length of a terabyte", frame("{}", "Content-Length: 1000000000000"), "over"},
		{"a length past int64", frame("{}", "Content-Length: 99999999999999999999999"), "over"},
		{"another charset", frame("{}", "Content-Length: 2", "Content-Type: application/vscode-jsonrpc; charset=latin1"), "Content-Type"},
		{"another type", frame("{}", "Content-Length: 2", "Content-Type: text/html"), "Content-Type"},
		{"a bare LF", "Content-Length: 2\n\r\n{}", "CRLF"},
		{"a body that is not JSON", frame("{not json"), "not valid JSON"},
		{"two values in one body", frame("{} {}"), "not valid JSON"},
		{"a body nested past the bound", frame(deep), "deeper than"},
		{"a body with more values than the bound", frame(values), "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readMessage(bufio.NewReader(strings.NewReader(tc.in)))
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeProtocol {
				t.Fatalf("got %v, want an *Error with %s", err, CodeProtocol)
			}
			if !strings.Contains(e.Reason, tc.want) {
				t.Errorf("reason %q does not say %q", e.Reason, tc.want)
			}
			if len(e.Error()) > 300 {
				t.Errorf("the refusal is %d bytes long: %q", len(e.Error()), e.Error())
			}
		})
	}
}

func TestCodecBoundsAtTheBound(t *testing.T) {
	atDepth := strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth)
	atValues := "[" + strings.Repeat("0,", maxJSONValues-2) + "0]"
	for name, body := range map[string]string{"depth": atDepth, "values": atValues} {
		if _, err := readMessage(bufio.NewReader(strings.NewReader(frame(body)))); err != nil {
			t.Errorf("a body at the %s bound: %v", name, err)
		}
	}
	line := "Content-Length: 2" + strings.Repeat(" ", maxHeaderLineBytes-len("Content-Length: 2")-2)
	if _, err := readMessage(bufio.NewReader(strings.NewReader(frame("{}", line)))); err != nil {
		t.Errorf("a header line of exactly %d bytes: %v", maxHeaderLineBytes, err)
	}
	many := []string{"Content-Length: 2"}
	for len(many) < maxHeaders {
		many = append(many, "Content-Type: application/vscode-jsonrpc")
	}
	if _, err := readMessage(bufio.NewReader(strings.NewReader(frame("{}", many...)))); err != nil {
		t.Errorf("%d header lines: %v", maxHeaders, err)
	}
}

func TestCodecEndsOfStream(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     error
	}{
		{"nothing", "", io.EOF},
		{"part of a header", "Content-Len", io.ErrUnexpectedEOF},
		{"a header without its blank line", "Content-Length: 2\r\n", io.ErrUnexpectedEOF},
		{"part of a body", "Content-Length: 10\r\n\r\n{}", io.ErrUnexpectedEOF},
	} {
		_, err := readMessage(bufio.NewReader(strings.NewReader(tc.in)))
		if err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// countingReader counts what was read of an endless source.
type countingReader struct {
	src io.Reader
	n   int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.src.Read(p)
	c.n += int64(n)
	return n, err
}

// endless yields b forever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// TestCodecHeaderWithoutEndReadsABoundedAmount: a header line that never
// ends is refused once it passes the bound, having read at most one
// buffer of it.
func TestCodecHeaderWithoutEndReadsABoundedAmount(t *testing.T) {
	src := &countingReader{src: io.MultiReader(strings.NewReader("Content-Length: 5"), endless('5'))}
	_, err := readMessage(bufio.NewReader(src))
	if CodeOf(err) != CodeProtocol {
		t.Fatalf("got %v, want a protocol refusal", err)
	}
	if src.n > 8<<10 {
		t.Errorf("read %d bytes of an endless header", src.n)
	}
}

// TestCodecHugeLengthAllocatesNothing: a Content-Length past the bound is
// refused before any of the body is read.
func TestCodecHugeLengthAllocatesNothing(t *testing.T) {
	src := &countingReader{src: io.MultiReader(strings.NewReader("Content-Length: 1000000000000\r\n\r\n"), endless('x'))}
	_, err := readMessage(bufio.NewReader(src))
	if CodeOf(err) != CodeProtocol {
		t.Fatalf("got %v, want a protocol refusal", err)
	}
	if src.n > 8<<10 {
		t.Errorf("read %d bytes after a refused length", src.n)
	}
}

// CodeOf returns the code of an *Error in err's chain, or "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// FuzzReadMessage: whatever a server sends, reading it never panics,
// returns either an error or a valid JSON body within the bounds, and
// never reads a body past MaxMessageBytes.
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte(frame(`{"jsonrpc":"2.0","method":"x"}`)))
	f.Add([]byte(frame("{}", "Content-Type: application/vscode-jsonrpc; charset=utf-8", "Content-Length: 2")))
	f.Add([]byte("Content-Length: 3\r\n\r\n[1]Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("Content-Length: 99999999999\r\n\r\n"))
	f.Add([]byte("Content-Length: 4\r\n\r\n\"\\\"\""))
	f.Add([]byte(frame(`[[[[{"a":[1,2,{"b":null}]}]]]]`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for range 16 {
			body, err := readMessage(r)
			if err != nil {
				return
			}
			if len(body) > MaxMessageBytes || !json.Valid(body) {
				t.Fatalf("accepted a body of %d bytes, valid %v", len(body), json.Valid(body))
			}
			var v json.RawMessage
			if err := (codec{}).ReadObject(bufio.NewReader(bytes.NewReader([]byte(frame(string(body))))), &v); err != nil {
				t.Fatalf("an accepted body does not read again: %v", err)
			}
		}
	})
}

// FuzzDecodeDiagnostics: whatever list a publication carries, decoding
// it never panics, keeps at most maxKeptDiagnostics with messages within
// maxMessageKeptBytes, most severe first, and counts what it kept.
func FuzzDecodeDiagnostics(f *testing.F) {
	f.Add([]byte(`[{"range":{"start":{"line":3}},"severity":1,"message":"m","source":"s"}]`))
	f.Add([]byte(`[1,"x",{"range":{"start":{"line":-1}}},{"severity":9},null]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		p := decodeDiagnostics(data)
		if len(p.items) > maxKeptDiagnostics {
			t.Fatalf("kept %d", len(p.items))
		}
		total := p.counts[0] + p.counts[1] + p.counts[2] + p.counts[3]
		if len(p.items) > total {
			t.Fatalf("kept %d of %d counted", len(p.items), total)
		}
		for i, d := range p.items {
			if len(d.Message) > maxMessageKeptBytes || d.Line < 1 {
				t.Fatalf("kept %+v", d)
			}
			if i > 0 && severityRank(p.items[i-1].Severity) > severityRank(d.Severity) {
				t.Fatalf("not most severe first: %+v", p.items)
			}
		}
	})
}
