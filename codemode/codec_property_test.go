package codemode

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentloom/loom/codemode/internal/wire"
	"github.com/agentloom/loom/codemode/internal/wire/wiretest"
	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

// echoPeer is the prelude's codec in a process of its own
// (testdata/probe/echo.go built on the embedded prelude).
type echoPeer struct {
	in  io.Writer
	out *bufio.Reader
}

func startEcho(t *testing.T) *echoPeer {
	t.Helper()
	src, err := os.ReadFile("testdata/probe/echo.go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(buildWithPrelude(t, string(src)))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	return &echoPeer{in: stdin, out: bufio.NewReader(stdout)}
}

// echo sends payload in mode ('v' or 'f') and returns the prelude's
// re-encoding, or ok false and its refusal.
func (p *echoPeer) echo(t *rapid.T, mode byte, payload []byte) ([]byte, bool) {
	req := append([]byte{mode}, binary.BigEndian.AppendUint32(nil, uint32(len(payload)))...)
	if _, err := p.in.Write(append(req, payload...)); err != nil {
		t.Fatalf("echo write: %v", err)
	}
	var hdr [5]byte
	if _, err := io.ReadFull(p.out, hdr[:]); err != nil {
		t.Fatalf("echo read: %v", err)
	}
	res := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	if _, err := io.ReadFull(p.out, res); err != nil {
		t.Fatalf("echo read: %v", err)
	}
	return res, hdr[0] == 0
}

// vmEncode is vmihailenco's own (reflective) encoding of v with the
// channel's settings: shortest integers, sorted map keys.
func vmEncode(t *rapid.T, v any) []byte {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("vmihailenco encode: %v", err)
	}
	return buf.Bytes()
}

// hostDecode decodes one standalone value the way ReadFrame decodes a
// body (depth counted from the body's level).
func hostDecode(b []byte) (any, error) { return wire.DecodeValue(b) }

// genValue draws a value of the decoded domain: nil, bool, int64,
// uint64 above MaxInt64, float64 (any bits), string, []byte, []any and
// map[string]any, nested at most maxDepth.
func genValue(t *rapid.T, depth int) any {
	const maxDepth = 5
	kinds := 9
	if depth >= maxDepth {
		kinds = 7
	}
	switch rapid.IntRange(0, kinds).Draw(t, "kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, "bool")
	case 2:
		return rapid.Int64().Draw(t, "int")
	case 3:
		return rapid.SampledFrom([]int64{-1 << 63, -1<<31 - 1, -1 << 31, -32769, -32768, -129, -128, -33, -32, -1, 0, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, math.MaxInt64}).Draw(t, "edge int")
	case 4:
		return rapid.Uint64Range(1<<63, math.MaxUint64).Draw(t, "uint")
	case 5:
		return math.Float64frombits(rapid.Uint64().Draw(t, "float bits"))
	case 6:
		if rapid.IntRange(0, 4).Draw(t, "long") == 0 {
			return strings.Repeat("s", rapid.SampledFrom(wiretest.BoundaryLens).Draw(t, "str len"))
		}
		return string(rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "str"))
	case 7:
		if rapid.IntRange(0, 4).Draw(t, "long") == 0 {
			return bytes.Repeat([]byte{7}, rapid.SampledFrom(wiretest.BoundaryLens).Draw(t, "bin len"))
		}
		return append([]byte{}, rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "bin")...)
	case 8:
		n := rapid.IntRange(0, 4).Draw(t, "len")
		if rapid.IntRange(0, 5).Draw(t, "long") == 0 {
			n = rapid.SampledFrom(wiretest.BoundaryLens).Draw(t, "array len")
		}
		a := make([]any, n)
		for i := range a {
			if i < 20 {
				a[i] = genValue(t, depth+1)
			}
		}
		return a
	default:
		n := rapid.SampledFrom([]int{0, 1, 2, 3, 15, 16, 17}).Draw(t, "map len")
		keys := rapid.SliceOfNDistinct(rapid.StringN(0, 12, -1), n, n, func(s string) string { return s }).Draw(t, "keys")
		m := make(map[string]any, n)
		for _, k := range keys {
			m[k] = genValue(t, depth+1)
		}
		return m
	}
}

// TestCodecsAgree: on every generated value the prelude's codec and
// vmihailenco agree in both directions: the prelude decodes
// vmihailenco's bytes and re-encodes them byte for byte, and the host
// decodes the prelude's bytes to the value generated; the same for whole
// frames through WriteFrame, the prelude's ReadFrame and AppendFrame,
// and ReadFrame; and on arbitrary bytes both decoders accept the same
// inputs, to the same values.
func TestCodecsAgree(t *testing.T) {
	t.Parallel()
	peer := startEcho(t)
	t.Run("values", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			v := genValue(t, 0)
			vm := vmEncode(t, v)
			pe, ok := peer.echo(t, 'v', vm)
			if !ok {
				t.Fatalf("prelude refused vmihailenco's encoding of %#v: %s", v, pe)
			}
			if !bytes.Equal(pe, vm) {
				t.Fatalf("prelude re-encoded\n% x\nvmihailenco\n% x", pe, vm)
			}
			got, err := hostDecode(pe)
			if err != nil || !wiretest.SameValue(got, v) {
				t.Fatalf("host decoded the prelude's bytes to %#v, %v; want %#v", got, err, v)
			}
		})
	})
	t.Run("frames", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			kind := rapid.SampledFrom([]wire.FrameKind{wire.FrameCapCall, wire.FrameCancel, wire.FrameCapResult, wire.FrameOutcome}).Draw(t, "kind")
			f := wire.Frame{ID: rapid.Uint64Range(0, wire.MaxFrameID).Draw(t, "id"), Kind: kind, Body: genValue(t, 1)}
			switch kind {
			case wire.FrameCancel:
				f.Body = nil
			case wire.FrameOutcome:
				f.ID = 0
			}
			var buf bytes.Buffer
			if err := wire.WriteFrame(&buf, f); err != nil {
				t.Fatal(err)
			}
			pe, ok := peer.echo(t, 'f', buf.Bytes())
			if !ok {
				t.Fatalf("prelude refused the frame: %s", pe)
			}
			if !bytes.Equal(pe, buf.Bytes()) {
				t.Fatalf("prelude re-encoded the frame\n% x\nhost\n% x", pe, buf.Bytes())
			}
			got, err := wire.ReadFrame(bytes.NewReader(pe))
			if err != nil || got.ID != f.ID || got.Kind != f.Kind || !wiretest.SameValue(got.Body, f.Body) {
				t.Fatalf("ReadFrame of the prelude's frame = %#v, %v; want %#v", got, err, f)
			}
		})
	})
	t.Run("arbitrary bytes", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			in := rapid.SliceOfN(rapid.Byte(), 0, 48).Draw(t, "bytes")
			hv, herr := hostDecode(in)
			pe, ok := peer.echo(t, 'v', in)
			if ok != (herr == nil) {
				t.Fatalf("on % x the host says %v and the prelude %v (%s)", in, herr, ok, pe)
			}
			if !ok {
				return
			}
			got, err := hostDecode(pe)
			if err != nil || !wiretest.SameValue(got, hv) {
				t.Fatalf("on % x: host %#v, prelude %#v (%v)", in, hv, got, err)
			}
		})
	})
}
