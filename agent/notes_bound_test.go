package agent

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/tool"
)

// jsonString is a JSON string value of exactly n bytes (n >= 2).
func jsonString(n int) string { return `"` + strings.Repeat("x", n-2) + `"` }

// Each bound on a note's value, both sides of it: the Agency's (a
// program's, MaxProgramNoteBytes), agent_note's (MaxNoteBytes), a
// result note's (MaxNoteBytes, however written) and a strand's bytes in
// all (maxStrandNoteBytes).
func TestNoteBounds(t *testing.T) {
	cases := []struct {
		name string
		key  string
		n    int
		tool bool // through agent_note, else Agency.Note as a program does
		want tool.Code
	}{
		{"program at its bound", "p", MaxProgramNoteBytes, false, ""},
		{"program past its bound", "p", MaxProgramNoteBytes + 1, false, CodeNoteTooLarge},
		{"agent_note at its bound", "t", MaxNoteBytes, true, ""},
		{"agent_note past its bound", "t", MaxNoteBytes + 1, true, CodeNoteTooLarge},
		{"program past agent_note's bound", "p", MaxNoteBytes + 1, false, ""},
		{"result note at its bound", ResultNoteKey, MaxNoteBytes, false, ""},
		{"result note past its bound from a program", ResultNoteKey, MaxNoteBytes + 1, false, CodeNoteTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAgency(echo, Options{})
			defer a.Close()
			v := jsonString(tc.n)
			var got tool.Code
			if tc.tool {
				o := dispatch(registry(t, a), &tool.Call{Strand: "main"}, NoteToolName, `{"key":"`+tc.key+`","value":`+v+`}`)
				got = o.Code
				if tc.want != "" && !strings.Contains(o.Text, "cap/notes") {
					t.Errorf("the refusal does not say where a larger value goes: %s", o.Text)
				}
			} else {
				_, err := a.Note(bg, root("main", 1), tc.key, json.RawMessage(v))
				got = codeOf(err)
			}
			if got != tc.want {
				t.Fatalf("code %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStrandNoteBytes(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	v := json.RawMessage(jsonString(MaxProgramNoteBytes))
	for i := range maxStrandNoteBytes / MaxProgramNoteBytes {
		if _, err := a.Note(bg, c, "n"+string(rune('a'+i)), v); err != nil {
			t.Fatalf("note %d, within the strand's bytes: %v", i, err)
		}
	}
	if _, err := a.Note(bg, c, "one-more", json.RawMessage(`1`)); codeOf(err) != CodeNoteLimit {
		t.Fatalf("one byte past the strand's bytes: %v", err)
	}
	if _, err := a.Note(bg, root("other", 1), "k", json.RawMessage(`1`)); err != nil {
		t.Fatalf("another strand's bytes are its own: %v", err)
	}
}

// agent_notes never carries a value over MaxNoteBytes: it shows the
// size and the note:// path that reads it, and holds no value in
// Details, so its answer stays within the bound tools_bound_test states.
func TestNotesToolElidesProgramNotes(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	if _, err := a.Note(bg, c, "big", json.RawMessage(jsonString(MaxNoteBytes+1))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Note(bg, c, "small", json.RawMessage(jsonString(MaxNoteBytes))); err != nil {
		t.Fatal(err)
	}
	o := dispatch(registry(t, a), &tool.Call{Strand: "main"}, NotesToolName, `{}`)
	d := o.Details.(NotesDetails)
	if o.IsError || len(d.Notes) != 2 {
		t.Fatalf("%+v", o)
	}
	big, small := d.Notes[0], d.Notes[1]
	if !big.Elided || big.Value != nil || big.Bytes != MaxNoteBytes+1 || !strings.Contains(o.Text, "fs_read note://agent/main/big") {
		t.Fatalf("the big note: %+v\n%.500s", big, o.Text)
	}
	if small.Elided || len(small.Value) != MaxNoteBytes {
		t.Fatalf("the note at the bound is shown whole: elided %v, %d bytes", small.Elided, len(small.Value))
	}
}

func TestNoteView(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	for key, v := range map[string]string{"findings/auth": `{"ok":true}`, "findings/db": `[1,2]`, "plan": `"p"`} {
		if _, err := a.Note(bg, c, key, json.RawMessage(v)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		uri       string
		wantKey   string
		wantValue string
		wantList  []string
		want      tool.Code
	}{
		{uri: "note://", wantList: []string{"agent/main/findings/auth", "agent/main/findings/db", "agent/main/plan"}},
		{uri: "note://agent/", wantList: []string{"agent/main/findings/auth", "agent/main/findings/db", "agent/main/plan"}},
		{uri: "note://agent/main/findings/", wantList: []string{"agent/main/findings/auth", "agent/main/findings/db"}},
		{uri: "note://main/findings/", wantList: []string{"agent/main/findings/auth", "agent/main/findings/db"}},
		{uri: "note://agent/main/findings/auth", wantKey: "agent/main/findings/auth", wantValue: "{\n  \"ok\": true\n}"},
		{uri: "note://main/plan", wantKey: "agent/main/plan", wantValue: `"p"`},
		// A prefix of keys is no key.
		{uri: "note://agent/main/findings", want: CodeNoteNotFound},
		{uri: "note://agent/main/nope", want: CodeNoteNotFound},
		{uri: "job://x", want: tool.CodeUnknownScheme},
	}
	for _, tc := range cases {
		t.Run(tc.uri, func(t *testing.T) {
			v, err := ReadNoteView(bg, a, c, tc.uri)
			if codeOf(err) != tc.want {
				t.Fatalf("code %q (%v), want %q", codeOf(err), err, tc.want)
			}
			if v.Key != tc.wantKey || string(v.Value) != tc.wantValue {
				t.Fatalf("key %q value %q, want %q and %q", v.Key, v.Value, tc.wantKey, tc.wantValue)
			}
			var keys []string
			for _, n := range v.Notes {
				keys = append(keys, n.Key)
			}
			if strings.Join(keys, " ") != strings.Join(tc.wantList, " ") {
				t.Fatalf("listed %v, want %v", keys, tc.wantList)
			}
		})
	}
	if _, err := ReadNoteView(bg, nil, c, "note://"); codeOf(err) != CodeAgencyUnavailable {
		t.Fatalf("nil agency: %v", err)
	}
}

// fs_read note:// is a read-only view: listings and small notes inline,
// a note over the inline limit spilled to the blob store (refused
// without one), every answer bounded.
func TestNoteScheme(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	if _, err := a.Note(bg, c, "small", json.RawMessage(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Note(bg, c, "huge", json.RawMessage(jsonString(MaxProgramNoteBytes))); err != nil {
		t.Fatal(err)
	}
	r, err := tool.NewRegistry(tool.ReadTool(NoteScheme(a)))
	if err != nil {
		t.Fatal(err)
	}
	store, err := blob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	withBlobs := &tool.Call{Strand: "other", Blobs: store}
	read := func(call *tool.Call, path string) tool.Outcome {
		return dispatch(r, call, "fs_read", `{"path":"`+path+`"}`)
	}
	if o := read(withBlobs, "note://"); o.IsError || !strings.Contains(o.Text, "agent/main/huge 1048576") || !strings.Contains(o.Text, "agent/main/small 7") {
		t.Fatalf("listing: %+v", o)
	}
	if o := read(withBlobs, "note://agent/main/small"); o.IsError || !strings.Contains(o.Text, "\"a\": 1") || !strings.Contains(o.Text, "not instructions") {
		t.Fatalf("small note: %+v", o)
	}
	o := read(withBlobs, "note://agent/main/huge")
	ov := regexpPath(o.Text)
	if o.IsError || len(o.Text) > blob.OverflowThreshold || ov == "" {
		t.Fatalf("huge note: error %v, %d bytes, no file named:\n%.600s", o.IsError, len(o.Text), o.Text)
	}
	if b, err := os.ReadFile(ov); err != nil || len(b) != MaxProgramNoteBytes {
		t.Fatalf("the spilled note: %d bytes, %v", len(b), err)
	}
	if o := read(&tool.Call{Strand: "other"}, "note://agent/main/huge"); o.Code != tool.CodeSpillFailed {
		t.Fatalf("no blob store: %+v", o.Code)
	}
	if o := read(withBlobs, "note://agent/main/none"); o.Code != CodeNoteNotFound {
		t.Fatalf("missing note: %+v", o)
	}
}

// A strand that does not hold agent_notes reads no note through fs_read
// either; one that holds it does (the control).
func TestNoteSchemeNeedsAgentNotes(t *testing.T) {
	a := NewAgency(echo, Options{RootTools: []string{"fs_read", SpawnToolName, NoteToolName, SendToolName}})
	defer a.Close()
	if _, err := a.Note(bg, root("main", 1), "k", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	reader := NewAgency(echo, Options{})
	defer reader.Close()
	if _, err := reader.Note(bg, root("main", 1), "k", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		agency Agency
		want   tool.Code
	}{{"without agent_notes", a, tool.CodeToolNotHeld}, {"with agent_notes", reader, ""}} {
		r, err := tool.NewRegistry(tool.ReadTool(NoteScheme(tc.agency)))
		if err != nil {
			t.Fatal(err)
		}
		if o := dispatch(r, &tool.Call{Strand: "main"}, "fs_read", `{"path":"note://agent/main/k"}`); o.Code != tc.want {
			t.Errorf("%s: code %q, want %q: %s", tc.name, o.Code, tc.want, o.Text)
		}
	}
}

// regexpPath is the first absolute path in text, or "".
func regexpPath(text string) string {
	for _, f := range strings.Fields(text) {
		f = strings.Trim(f, "()[],;:'\"`")
		if strings.HasPrefix(f, "/") {
			if _, err := os.Stat(f); err == nil {
				return f
			}
		}
	}
	return ""
}
