// Command fakeserver is a scripted language server for package lsp's
// tests: it speaks the base protocol on standard input and output and
// behaves as its -mode says, so a test can run it through the jail
// exactly as gopls runs.
//
// Modes:
//
//	publish         answer initialize; on every didOpen and didChange,
//	                publish the document's version with an error on each
//	                line holding "ERR" and a warning on each holding "WARN"
//	silent          answer initialize, never publish
//	crash           answer initialize, exit 3 at the first didOpen
//	exit-at-start   exit 4 before reading anything
//	hang-init       never answer initialize
//	stop-reading    answer initialize, then read nothing more
//	huge-length     answer initialize; at didOpen, name a Content-Length of 1 TB
//	endless-header  answer initialize; at didOpen, send a header line that never ends
//	malformed       answer initialize; at didOpen, send a body that is not JSON
//	outside         publish for URIs outside the workspace, then as publish
//	flood           publish 5000 warnings and one error (last) for the document
//	stale           publish an older version first, then the right one
//	unversioned     publish without a version
//	requests        ask the client several requests, then publish
//	watch           publish, as information, what it heard since the last
//	                publication: "created|changed|deleted NAME" for each
//	                watched-file change, "closed NAME" for each didClose
//	probe           publish, as information, what writing a file into its
//	                working directory (the workspace) did
//	lang            answer the language operations (see lang.go) over the
//	                *.txt files of its working directory, as publish
//	                otherwise
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

var out = bufio.NewWriter(os.Stdout)

func send(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(out, "Content-Length: %d\r\n\r\n", len(b))
	out.Write(b)
	out.Flush()
}

func read(in *bufio.Reader) (map[string]json.RawMessage, error) {
	n := -1
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(in, b); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	return m, json.Unmarshal(b, &m)
}

type doc struct {
	URI     string `json:"uri"`
	Version int    `json:"version"`
	Text    string `json:"text"`
}

func diagnostics(text string) []map[string]any {
	out := []map[string]any{}
	for i, l := range strings.Split(text, "\n") {
		sev := 0
		switch {
		case strings.Contains(l, "ERR"):
			sev = 1
		case strings.Contains(l, "WARN"):
			sev = 2
		}
		if sev > 0 {
			out = append(out, map[string]any{
				"range":    map[string]any{"start": map[string]int{"line": i, "character": 0}, "end": map[string]int{"line": i, "character": 1}},
				"severity": sev, "source": "fake", "message": "flagged: " + l,
			})
		}
	}
	return out
}

func publish(uri string, version any, diags []map[string]any) {
	params := map[string]any{"uri": uri, "diagnostics": diags}
	if version != nil {
		params["version"] = version
	}
	send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params})
}

func main() {
	mode := flag.String("mode", "publish", "behaviour")
	flag.Parse()
	if *mode == "exit-at-start" {
		fmt.Fprintln(os.Stderr, "fake: refusing to start")
		os.Exit(4)
	}
	in := bufio.NewReader(os.Stdin)
	nextID := 1000
	var heard []string
	for {
		m, err := read(in)
		if err != nil {
			os.Exit(0)
		}
		var method string
		json.Unmarshal(m["method"], &method)
		id, isRequest := m["id"]
		switch method {
		case "initialize":
			if *mode == "hang-init" {
				time.Sleep(time.Hour)
			}
			caps := map[string]any{"textDocumentSync": 1}
			if *mode == "pull-retain" {
				caps["diagnosticProvider"] = map[string]any{}
			}
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"capabilities": caps}})
			if *mode == "trickle" {
				buf := make([]byte, 200)
				for {
					time.Sleep(100 * time.Millisecond)
					if _, err := io.ReadFull(in, buf); err != nil {
						os.Exit(0)
					}
				}
			}
			if *mode == "stop-reading" {
				time.Sleep(time.Hour)
			}
			continue
		case "shutdown":
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": nil})
			continue
		case "exit":
			os.Exit(0)
		}
		if method == "textDocument/diagnostic" {
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"kind": "full", "items": []any{map[string]any{"range": map[string]any{"start": map[string]int{"line": 0}}, "severity": 1, "message": "pulled"}}}})
			continue
		}
		if isRequest && method == "" {
			continue // a response to one of our requests
		}
		if *mode == "lang" && isRequest {
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": answer(method, m["params"])})
			continue
		}
		var p struct {
			TextDocument   doc `json:"textDocument"`
			ContentChanges []struct {
				Text string `json:"text"`
			} `json:"contentChanges"`
		}
		json.Unmarshal(m["params"], &p)
		d := p.TextDocument
		switch method {
		case "workspace/didChangeWatchedFiles":
			var w struct {
				Changes []struct {
					URI  string `json:"uri"`
					Type int    `json:"type"`
				} `json:"changes"`
			}
			json.Unmarshal(m["params"], &w)
			for _, c := range w.Changes {
				heard = append(heard, []string{"", "created", "changed", "deleted"}[c.Type%4]+" "+c.URI[strings.LastIndex(c.URI, "/")+1:])
			}
			continue
		case "textDocument/didClose":
			heard = append(heard, "closed "+d.URI[strings.LastIndex(d.URI, "/")+1:])
			delete(opened, d.URI)
			continue
		case "textDocument/didOpen":
			opened[d.URI] = d.Text
		case "textDocument/didChange":
			if len(p.ContentChanges) > 0 {
				d.Text = p.ContentChanges[len(p.ContentChanges)-1].Text
			}
			opened[d.URI] = d.Text
		default:
			continue
		}
		switch *mode {
		case "publish", "lang":
			publish(d.URI, d.Version, diagnostics(d.Text))
		case "pull-retain":
			diags := make([]map[string]any, 0, 64)
			for i := 0; i < 64; i++ {
				diags = append(diags, map[string]any{"range": map[string]any{"start": map[string]int{"line": 0}}, "severity": 1, "message": strings.Repeat("m", 1024), "source": strings.Repeat("s", 64)})
			}
			publish(d.URI, d.Version, diags)
			time.Sleep(20 * time.Millisecond)
		case "silent":
		case "crash":
			fmt.Fprintln(os.Stderr, "fake: crashing on purpose")
			os.Exit(3)
		case "huge-length":
			fmt.Fprintf(out, "Content-Length: 1000000000000\r\n\r\n")
			out.Flush()
			time.Sleep(time.Hour)
		case "endless-header":
			fmt.Fprintf(out, "Content-Length: 5")
			chunk := strings.Repeat("5", 4096)
			for {
				if _, err := fmt.Fprint(out, chunk); err != nil {
					os.Exit(0)
				}
				out.Flush()
			}
		case "malformed":
			body := `{"jsonrpc":"2.0","method":`
			fmt.Fprintf(out, "Content-Length: %d\r\n\r\n%s", len(body), body)
			out.Flush()
			time.Sleep(time.Hour)
		case "outside":
			publish("file:///etc/passwd", d.Version, []map[string]any{{"range": map[string]any{"start": map[string]int{"line": 0}}, "severity": 1, "message": "root:x:0:0"}})
			publish(strings.Replace(d.URI, "file://", "file://evil.example", 1), d.Version, diagnostics("ERR from another host"))
			dir := d.URI[:strings.LastIndex(d.URI, "/")]
			publish(dir+"/../../../etc/shadow", d.Version, diagnostics("ERR escaped"))
			publish(d.URI, d.Version, diagnostics(d.Text))
		case "flood":
			diags := make([]map[string]any, 0, 5001)
			for i := 0; i < 5000; i++ {
				diags = append(diags, map[string]any{"range": map[string]any{"start": map[string]int{"line": i % 3}}, "severity": 2, "message": "warned " + strconv.Itoa(i)})
			}
			diags = append(diags, map[string]any{"range": map[string]any{"start": map[string]int{"line": 1}}, "severity": 1, "message": "the one error"})
			publish(d.URI, d.Version, diags)
		case "stale":
			publish(d.URI, d.Version-1, diagnostics("ERR stale"))
			time.Sleep(50 * time.Millisecond)
			publish(d.URI, d.Version, diagnostics(d.Text))
		case "unversioned":
			publish(d.URI, nil, diagnostics(d.Text))
		case "watch":
			var diags []map[string]any
			for _, h := range heard {
				diags = append(diags, map[string]any{"range": map[string]any{"start": map[string]int{"line": 0}}, "severity": 3, "message": h})
			}
			heard = nil
			publish(d.URI, d.Version, diags)
		case "probe":
			err := os.WriteFile("planted.txt", []byte("x"), 0o644)
			publish(d.URI, d.Version, []map[string]any{{"range": map[string]any{"start": map[string]int{"line": 0}}, "severity": 3, "message": fmt.Sprint("write: ", err)}})
		case "requests":
			for _, method := range []string{"workspace/configuration", "workspace/applyEdit", "window/workDoneProgress/create", "no/such/method"} {
				nextID++
				send(map[string]any{"jsonrpc": "2.0", "id": nextID, "method": method, "params": map[string]any{"items": []any{map[string]any{}}}})
			}
			publish(d.URI, d.Version, diagnostics(d.Text))
		}
	}
}
