package lsp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bounds on one message a server sends. Everything past them is refused
// as a protocol violation (CodeProtocol), the connection is dropped and
// the server stopped: a stream that broke a bound once cannot be trusted
// to be back in step.
const (
	// MaxMessageBytes bounds a message's Content-Length.
	MaxMessageBytes = 16 << 20
	// maxHeaderLineBytes bounds one header line, its CRLF included.
	maxHeaderLineBytes = 1024
	// maxHeaders bounds the header lines before the empty line that ends
	// them.
	maxHeaders = 8
	// maxJSONDepth bounds how deeply a message's JSON values nest.
	maxJSONDepth = 64
	// maxJSONValues bounds how many JSON values (objects, arrays, strings,
	// numbers, literals) one message holds: what decoding it may allocate
	// follows this count, not its byte length alone.
	maxJSONValues = 1 << 20
)

// codec is the base protocol's framing (Content-Length headers, then a
// JSON body) with every bound above: a jsonrpc2.ObjectCodec for one
// connection. The library's own VSCodeObjectCodec reads header lines and
// bodies without bound, so a server could make the host allocate
// whatever it names.
type codec struct{}

// WriteObject frames obj.
func (codec) WriteObject(stream io.Writer, obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stream, "Content-Length: %d\r\n\r\n", len(data)); err != nil {
		return err
	}
	_, err = stream.Write(data)
	return err
}

// ReadObject reads one framed message into v. A violation of the framing
// or of a bound is an *Error with CodeProtocol; an end of the stream is
// io.EOF (between messages) or io.ErrUnexpectedEOF (inside one).
func (codec) ReadObject(stream *bufio.Reader, v any) error {
	body, err := readMessage(stream)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// readMessage reads one message's header and body, checked against the
// bounds; the body is valid JSON within maxJSONDepth and maxJSONValues.
func readMessage(r *bufio.Reader) ([]byte, error) {
	length := -1
	for n := 0; ; n++ {
		line, err := readHeaderLine(r, n == 0)
		if err != nil {
			return nil, err
		}
		if line == "" {
			break
		}
		if n >= maxHeaders {
			return nil, protocolf("more than %d header lines", maxHeaders)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, protocolf("header line %s has no colon", quoteBounded(line))
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(name) {
		case "content-length":
			if length >= 0 {
				return nil, protocolf("two Content-Length headers")
			}
			if length, err = parseLength(value); err != nil {
				return nil, err
			}
		case "content-type":
			if !utf8JSONRPC(value) {
				return nil, protocolf("Content-Type %s is not application/vscode-jsonrpc in UTF-8", quoteBounded(value))
			}
		default:
			return nil, protocolf("unknown header %s (only Content-Length and Content-Type are accepted)", quoteBounded(name))
		}
	}
	if length < 0 {
		return nil, protocolf("no Content-Length header")
	}
	// Read as the bytes arrive, never allocated ahead: a server that names
	// a length and stalls holds only what it sent.
	var body bytes.Buffer
	if _, err := io.CopyN(&body, r, int64(length)); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if err := checkJSON(body.Bytes()); err != nil {
		return nil, err
	}
	return body.Bytes(), nil
}

// readHeaderLine reads one header line without its CRLF, refusing one
// longer than maxHeaderLineBytes before it reads more. first marks the
// line a message starts with: an end of the stream there is io.EOF.
func readHeaderLine(r *bufio.Reader, first bool) (string, error) {
	var line []byte
	for {
		// ReadSlice returns at most the reader's buffer, without copying;
		// what is kept is bounded by maxHeaderLineBytes.
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxHeaderLineBytes {
			return "", protocolf("header line longer than %d bytes", maxHeaderLineBytes)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			if len(line) < 2 || line[len(line)-2] != '\r' {
				return "", protocolf("header line %s does not end in CRLF", quoteBounded(string(line)))
			}
			return string(line[:len(line)-2]), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if first && len(line) == 0 {
				return "", io.EOF
			}
			return "", io.ErrUnexpectedEOF
		default:
			return "", err
		}
	}
}

// parseLength parses a Content-Length value: decimal digits only, at most
// MaxMessageBytes.
func parseLength(v string) (int, error) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, protocolf("Content-Length %s is not a decimal number", quoteBounded(v))
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > MaxMessageBytes {
		return 0, protocolf("Content-Length %s is over %d bytes", quoteBounded(v), MaxMessageBytes)
	}
	return n, nil
}

// utf8JSONRPC reports whether a Content-Type value names the base
// protocol's type in UTF-8 (the specification's "utf8" spelling too), or
// names the type alone (UTF-8 is the default).
func utf8JSONRPC(v string) bool {
	parts := strings.Split(v, ";")
	if strings.ToLower(strings.TrimSpace(parts[0])) != "application/vscode-jsonrpc" {
		return false
	}
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.ToLower(strings.TrimSpace(k)) != "charset" {
			return false
		}
		switch strings.ToLower(strings.Trim(strings.TrimSpace(val), `"`)) {
		case "utf-8", "utf8":
		default:
			return false
		}
	}
	return true
}

// checkJSON refuses a body that is not one valid JSON value, nests
// deeper than maxJSONDepth or holds more than maxJSONValues values. It
// allocates nothing per value.
func checkJSON(b []byte) error {
	if !json.Valid(b) {
		return protocolf("the message body is not valid JSON")
	}
	depth, values := 0, 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			values++
		case '{', '[':
			depth++
			values++
			if depth > maxJSONDepth {
				return protocolf("the message nests deeper than %d", maxJSONDepth)
			}
		case '}', ']':
			depth--
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 't', 'f', 'n':
			// The first byte of a number or literal; skip the rest of it.
			values++
			for i+1 < len(b) && !jsonDelimiter(b[i+1]) {
				i++
			}
		}
		if values > maxJSONValues {
			return protocolf("the message holds more than %d JSON values", maxJSONValues)
		}
	}
	return nil
}

// jsonDelimiter reports whether c ends a number or literal in valid JSON.
func jsonDelimiter(c byte) bool {
	switch c {
	case ',', ':', ']', '}', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// quoteBounded quotes s for a message, cut to 64 bytes.
func quoteBounded(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}
