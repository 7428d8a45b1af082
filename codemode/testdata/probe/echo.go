// Command echo decodes what it is sent with the prelude's codec and
// re-encodes it, for codec_property_test.go. A request is a mode byte
// ('v' a msgpack value, 'f' a length-prefixed frame), a 4-byte length
// and the payload; the answer is a status byte (0 decoded, 1 refused),
// a 4-byte length and the re-encoding or the refusal's text.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"

	"cap/internal/wire"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			return
		}
		payload := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
		if _, err := io.ReadFull(in, payload); err != nil {
			return
		}
		var res []byte
		var err error
		switch hdr[0] {
		case 'v':
			var v any
			if v, err = wire.Decode(payload); err == nil {
				res, err = wire.Append(nil, v)
			}
		case 'f':
			var f wire.Frame
			if f, err = wire.ReadFrame(bytes.NewReader(payload)); err == nil {
				res, err = wire.AppendFrame(nil, f)
			}
		}
		status := byte(0)
		if err != nil {
			status, res = 1, []byte(err.Error())
		}
		out.WriteByte(status)
		out.Write(binary.BigEndian.AppendUint32(nil, uint32(len(res))))
		out.Write(res)
		out.Flush()
	}
}
