// Package report mints artifacts: named content the host keeps after the
// program ends, addressed by digest, listed with the program's result.
// Use it for anything too large or too structured for stdout (a JSON
// summary, a patch, a table). The host bounds the size of each artifact
// and the number per execution, refusing past either.
//
// Safe to call from many goroutines at once.
//
// Example:
//
//	a, err := report.Emit(ctx, "summary.json", data, "application/json")
//	if err != nil {
//		panic(err)
//	}
//	fmt.Println("wrote", a.Digest, a.Bytes)
package report

import (
	"context"

	"cap/internal/client"
)

// Error is the error every cap package returns: report.Error, fs.Error
// and the rest are one type. Fields: Cap ("report.emit"), Code (a stable
// snake_case word to switch on), Message. See fs.Error for the codes.
type Error = client.Error

// Artifact is an emitted artifact's address.
type Artifact struct {
	Digest string // the content's digest, as the host's blob store names it
	Bytes  int    // len(content)
}

// Emit stores content as an artifact called name. mediaType is optional
// ("" lets the host choose); "text/markdown" and "application/json" are
// typical. Content past 1 MiB fails with "artifact_too_large".
func Emit(ctx context.Context, name string, content []byte, mediaType string) (Artifact, error) {
	const capName = "report.emit"
	if content == nil {
		content = []byte{}
	}
	args := map[string]any{"name": name, "content": content}
	if mediaType != "" {
		args["media_type"] = mediaType
	}
	m, err := client.Call(ctx, capName, args)
	if err != nil {
		return Artifact{}, err
	}
	r := client.Read(m)
	a := Artifact{Digest: r.Str("digest"), Bytes: r.Int("bytes")}
	return a, r.Err(capName)
}
